# Stubs of the BIG-IP iRule commands lbdesk's iRules use, for running them in tclsh.
# The test appends the iRules of a virtual server (in order) and then calls `lbd_run` with a
# file of requests, one per line, every field hex-encoded UTF-8:
#   host path query client headers cookies
# where headers and cookies are "-" or comma-separated hex(name)=hex(value) pairs.
# For each request it prints "<pool chosen or none> <injected calls> <error or ->".

set ::handlers {}
proc when {event body} { lappend ::handlers $event $body }
proc pool {name} { set ::chosen $name }
proc reject {} { set ::chosen reject }
# Injection canary: hostile test values call it; it must never run.
proc lbd_pwned {args} { lappend ::pwned $args }

proc crc32 {s} { zlib crc32 [encoding convertto utf-8 $s] }
proc getfield {s sep n} { lindex [split $s $sep] [expr {$n - 1}] }

namespace eval HTTP {}
proc HTTP::host {} { return $::req(host) }
proc HTTP::path {} { return $::req(path) }
proc HTTP::uri {} {
    if {$::req(query) eq ""} { return $::req(path) }
    return "$::req(path)?$::req(query)"
}
proc lbd_lookup {pairs name nocase} {
    foreach {k v} $pairs {
        if {$nocase ? [string equal -nocase $k $name] : [string equal $k $name]} { return [list 1 $v] }
    }
    return [list 0 ""]
}
proc HTTP::header {sub name} {
    lassign [lbd_lookup $::req(headers) $name 1] found value
    if {$sub eq "exists"} { return $found }
    return $value
}
proc HTTP::cookie {sub name} {
    lassign [lbd_lookup $::req(cookies) $name 0] found value
    if {$sub eq "exists"} { return $found }
    return $value
}

namespace eval URI {}
proc URI::query {uri name} {
    set at [string first "?" $uri]
    if {$at < 0} { return "" }
    foreach part [split [string range $uri [expr {$at + 1}] end] "&"] {
        set eq [string first "=" $part]
        if {$eq < 0} {
            if {$part eq $name} { return "" }
        } elseif {[string range $part 0 [expr {$eq - 1}]] eq $name} {
            return [string range $part [expr {$eq + 1}] end]
        }
    }
    return ""
}

namespace eval IP {}
proc IP::client_addr {} { return $::req(client) }
proc lbd_v4 {a} {
    if {![regexp {^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$} $a -> b1 b2 b3 b4]} { error "bad IPv4 $a" }
    set n 0
    foreach b [list $b1 $b2 $b3 $b4] {
        set b [scan $b %d]
        if {$b > 255} { error "bad IPv4 $a" }
        set n [expr {($n << 8) | $b}]
    }
    return $n
}
proc lbd_v6 {a} {
    set halves [split [string map {"::" "|"} $a] "|"]
    if {[llength $halves] > 2} { error "bad IPv6 $a" }
    set head [expr {[lindex $halves 0] eq "" ? {} : [split [lindex $halves 0] ":"]}]
    set tail {}
    if {[llength $halves] == 2 && [lindex $halves 1] ne ""} { set tail [split [lindex $halves 1] ":"] }
    set fill [expr {8 - [llength $head] - [llength $tail]}]
    if {($fill < 0) || ([llength $halves] == 1 && $fill != 0)} { error "bad IPv6 $a" }
    set n 0
    foreach g [concat $head [lrepeat $fill 0] $tail] {
        if {![regexp {^[0-9a-fA-F]{1,4}$} $g]} { error "bad IPv6 $a" }
        set n [expr {($n << 16) | [scan $g %x]}]
    }
    return $n
}
proc lbd_parse {a} {
    if {[string first ":" $a] >= 0} { return [list 128 [lbd_v6 $a]] }
    return [list 32 [lbd_v4 $a]]
}
proc IP::addr {a op b} {
    if {$op ne "equals"} { error "IP::addr $op is not stubbed" }
    if {[catch {lbd_parse $a} left]} { return 0 }
    set bits ""
    if {[string first "/" $b] >= 0} { lassign [split $b "/"] b bits }
    lassign $left width x
    lassign [lbd_parse $b] w2 y
    if {$width != $w2} { return 0 }
    if {$bits eq ""} { set bits $width }
    set shift [expr {$width - $bits}]
    return [expr {($x >> $shift) == ($y >> $shift)}]
}

proc lbd_unhex {h} {
    if {$h eq "-"} { return "" }
    encoding convertfrom utf-8 [binary format H* $h]
}
proc lbd_pairs {field} {
    if {$field eq "-"} { return {} }
    set out {}
    foreach pair [split $field ","] {
        lassign [split $pair "="] k v
        lappend out [lbd_unhex $k] [lbd_unhex $v]
    }
    return $out
}

proc lbd_run {file} {
    set f [open $file]
    while {[gets $f line] >= 0} {
        lassign $line host path query client headers cookies
        array set ::req [list host [lbd_unhex $host] path [lbd_unhex $path] query [lbd_unhex $query] \
            client [lbd_unhex $client] headers [lbd_pairs $headers] cookies [lbd_pairs $cookies]]
        set ::chosen none
        set ::pwned {}
        set err -
        foreach {event body} $::handlers {
            if {[catch {uplevel #0 $body} e]} { set err [string map {" " _ "\n" _} $e] }
        }
        puts "$::chosen [llength $::pwned] $err"
    }
    close $f
}
