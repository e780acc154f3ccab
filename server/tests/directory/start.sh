#!/bin/sh
# Starts a throw-away OpenLDAP for the tests: `start.sh DIR LDAPS_PORT LDAP_PORT` serves the
# seeded tree (seed.ldif, groups.ldif) on ldaps://127.0.0.1:LDAPS_PORT, on
# ldap://127.0.0.1:LDAP_PORT (for StartTLS) and on the socket DIR/ldapi (the tests' own changes,
# as the directory's administrator: cn=admin,dc=bank,dc=example, password admin-secret), with a
# certificate of a CA it makes (DIR/ca.pem). `kill $(cat DIR/slapd.pid)` stops it.
# It also writes lbdesk's configuration for it, read as Active Directory is
# (DIR/active-directory.yaml: sAMAccountName, memberOf, disabled by userAccountControl) and as
# OpenLDAP is (DIR/openldap.yaml: uid, groups searched), with the group mapping DIR/mapping.yaml.
# Needs Debian's slapd, ldap-utils and openssl.
set -eu
mkdir -p "$1"
dir=$(cd "$1" && pwd)
port=$2
plain_port=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir/db"
mkdir -p "$dir/db"
cd "$dir"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=lbdesk-test-ca \
    -keyout ca-key.pem -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
    -keyout key.pem -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile san.ext \
    -out cert.pem 2>/dev/null

cat > slapd.conf <<CONF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
include $here/ad.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
pidfile $dir/slapd.pid
TLSCACertificateFile $dir/ca.pem
TLSCertificateFile $dir/cert.pem
TLSCertificateKeyFile $dir/key.pem
database mdb
maxsize 104857600
suffix "dc=bank,dc=example"
rootdn "cn=admin,dc=bank,dc=example"
rootpw admin-secret
directory $dir/db
overlay memberof
access to attrs=userPassword by self write by anonymous auth by * none
access to * by dn.exact="cn=lbdesk,ou=services,dc=bank,dc=example" read by self read by * none
CONF

printf 'lbdesk-bind-secret\n' > bind-password
cat > mapping.yaml <<'MAPPING'
# lb-admins are platform admins; team-a-dev works in project-a (named by its DN, in another
# case than the directory's); team-b-ops and the posixGroup team-b-dev in project-b.
admins: ["cn=lb-admins,ou=groups,dc=bank,dc=example"]
projects:
  project-a: ["CN=Team-A-Dev,OU=Groups,DC=bank,DC=example"]
  project-b: [team-b-ops, team-b-dev]
MAPPING
common="url: ldaps://127.0.0.1:$port
caFile: $dir/ca.pem
bindDn: cn=lbdesk,ou=services,dc=bank,dc=example
bindPasswordFile: $dir/bind-password
mappingFile: $dir/mapping.yaml
timeoutSeconds: 2"
cat > active-directory.yaml <<AD
$common
users:
  base: ou=people,dc=bank,dc=example
  filter: (&(objectClass=inetOrgPerson)(!(userAccountControl:1.2.840.113556.1.4.803:=2)))
  nameAttribute: sAMAccountName
  memberOfAttribute: memberOf
AD
cat > openldap.yaml <<OL
$common
users:
  base: ou=people,dc=bank,dc=example
  filter: (&(objectClass=inetOrgPerson)(!(employeeType=disabled)))
  nameAttribute: uid
groups:
  base: ou=groups,dc=bank,dc=example
  filter: (|(member={dn})(memberUid={name}))
OL

slapadd -q -f slapd.conf -l "$here/seed.ldif"
socket=$(printf '%s/ldapi' "$dir" | sed 's|/|%2F|g')
slapd -f slapd.conf -h "ldaps://127.0.0.1:$port/ ldap://127.0.0.1:$plain_port/ ldapi://$socket"
# Groups are added online, so that the memberof overlay writes each member's memberOf (as
# Active Directory does).
for _ in $(seq 1 100); do
    if ldapadd -x -D cn=admin,dc=bank,dc=example -w admin-secret -H "ldapi://$socket" -f "$here/groups.ldif" >/dev/null 2>&1
    then
        exit 0
    fi
    sleep 0.1
done
echo "slapd did not start in $dir" >&2
exit 1
