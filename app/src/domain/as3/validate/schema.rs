//! A JSON schema of AS3, and a declaration checked against it one application at a time, each
//! part that passed remembered: a change of one listener of a 500-listener tenant checks that
//! listener's application, not the whole tenant again.
//!
//! NB: exact for AS3's schemas. An ADC's members other than its own properties are tenants and a
//! tenant's are applications, each checked on its own (`additionalProperties`, `propertyNames`
//! on each name), so a document passes if and only if every part passes. A part is the document
//! with every tenant cut to its own properties (the shell), plus one application.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, OnceLock};

use jsonschema::ValidationError;
use serde_json::{Map, Value};

/// The most errors reported for one document.
const MAX_ERRORS: usize = 20;
/// How many parts (and whole tenants) that passed are remembered, a hash each.
const REMEMBERED: usize = 16_384;

/// A draft-07 validator of an AS3 schema, and the properties its ADC and tenant define.
pub struct Schema {
    pub validator: jsonschema::Validator,
    adc_own: BTreeSet<String>,
    tenant_own: BTreeSet<String>,
}

/// An application of a declaration: its tenant, its name, its body.
type Application<'a> = (&'a String, &'a String, &'a Value);

/// The hashes of the parts that passed, oldest first.
#[derive(Default)]
struct Passed {
    set: HashSet<u64>,
    order: VecDeque<u64>,
}

impl Passed {
    fn remember(&mut self, hash: u64) {
        if self.set.insert(hash) {
            self.order.push_back(hash);
        }
        if self.order.len() > REMEMBERED
            && let Some(oldest) = self.order.pop_front()
        {
            self.set.remove(&oldest);
        }
    }
}

static PASSED: Mutex<Option<Passed>> = Mutex::new(None);

/// The hash of what passed a check, keyed per process, so that no one's declaration can be made
/// to collide with something that passed.
pub(super) fn hash(what: impl std::hash::Hash) -> u64 {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new).hash_one(what)
}

/// Whether something of this `hash` passed.
pub(super) fn passed(hash: u64) -> bool {
    PASSED.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|p| p.set.contains(&hash))
}

/// Remembers that something of this `hash` passed.
pub(super) fn remember(hash: u64) {
    PASSED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_default().remember(hash);
}

/// The names the definition `name` of `schema` gives properties of its own.
fn own_properties(schema: &Value, name: &str) -> BTreeSet<String> {
    let properties = schema.pointer(&format!("/definitions/{name}/properties")).and_then(Value::as_object);
    properties.into_iter().flat_map(|p| p.keys().cloned()).collect()
}

impl Schema {
    /// `schema` aimed at its definition `root`, with AS3's formats.
    pub fn build(schema: &str, root: &str) -> Result<Schema, String> {
        let mut schema: Value = serde_json::from_str(schema).map_err(|e| e.to_string())?;
        let (adc_own, tenant_own) = (own_properties(&schema, "ADC"), own_properties(&schema, "Tenant"));
        if tenant_own.is_empty() {
            return Err("the schema defines no Tenant properties".into());
        }
        // NB: the root is `oneOf [AS3, ADC, …]`, whose errors say only "no branch matched";
        // aiming at one definition gives errors that point into the declaration.
        if let Some(top) = schema.as_object_mut() {
            top.remove("oneOf");
            top.insert("$ref".into(), Value::String(format!("#/definitions/{root}")));
        }
        let validator = jsonschema::draft7::options()
            .should_validate_formats(true)
            .with_format("f5ip", super::f5ip)
            .with_format("f5bigip", super::f5bigip)
            .build(&schema)
            .map_err(|e| e.to_string())?;
        Ok(Schema { validator, adc_own, tenant_own })
    }

    /// The first errors of `doc`, whose ADC is the document itself (`adc_at` none) or its member
    /// `adc_at`: the shell checked, then each application not remembered as passed. A shell that
    /// fails has the whole document checked, so that its errors are not repeated per part.
    pub fn errors(&self, doc: &Value, adc_at: Option<&str>) -> Vec<ValidationError<'static>> {
        let whole = || self.validator.iter_errors(doc).take(MAX_ERRORS).map(ValidationError::to_owned).collect();
        let adc = match adc_at {
            Some(key) => doc.get(key),
            None => Some(doc),
        };
        let Some(adc) = adc.and_then(Value::as_object) else { return whole() };
        let (shell, apps) = self.cut(adc);
        let within = |adc: Value| match (adc_at, doc) {
            (Some(key), Value::Object(top)) => {
                let mut top: Map<String, Value> =
                    top.iter().filter(|(k, _)| *k != key).map(|(k, v)| (k.clone(), v.clone())).collect();
                top.insert(key.to_string(), adc);
                Value::Object(top)
            }
            _ => adc,
        };
        let shell_doc = within(Value::Object(shell.clone()));
        let shell_hash = hash(&shell_doc);
        if !passed(shell_hash) {
            if !self.validator.is_valid(&shell_doc) {
                return whole();
            }
            remember(shell_hash);
        }
        let mut errors = Vec::new();
        for (tenant, app, body) in apps {
            let part_hash = hash((shell_hash, tenant, app, body));
            if passed(part_hash) {
                continue;
            }
            let mut part = shell.clone();
            if let Some(Value::Object(cut)) = part.get_mut(tenant) {
                cut.insert(app.clone(), body.clone());
            }
            let part = within(Value::Object(part));
            let before = errors.len();
            errors.extend(self.validator.iter_errors(&part).take(MAX_ERRORS - before).map(ValidationError::to_owned));
            if errors.len() == before {
                remember(part_hash);
            } else if errors.len() >= MAX_ERRORS {
                break;
            }
        }
        errors
    }

    /// `adc` cut into its shell (each tenant with its own properties only) and its applications.
    fn cut<'a>(&self, adc: &'a Map<String, Value>) -> (Map<String, Value>, Vec<Application<'a>>) {
        let mut shell = Map::new();
        let mut apps = Vec::new();
        for (name, member) in adc {
            match member.as_object().filter(|_| !self.adc_own.contains(name)) {
                Some(tenant) => {
                    let mut own = Map::new();
                    for (key, value) in tenant {
                        if self.tenant_own.contains(key) {
                            own.insert(key.clone(), value.clone());
                        } else {
                            apps.push((name, key, value));
                        }
                    }
                    shell.insert(name.clone(), Value::Object(own));
                }
                None => {
                    shell.insert(name.clone(), member.clone());
                }
            }
        }
        (shell, apps)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{cis_validator, validator};
    use super::*;

    /// An application with a virtual server on `address`.
    fn app(address: &str) -> Value {
        json!({"class": "Application", "vs": {"class": "Service_TCP", "virtualPort": 80, "virtualAddresses": [address]}})
    }

    /// An ADC of tenant `t1` holding `apps`, the tenant's own properties as `tenant` says.
    fn adc(tenant: Value, apps: &[(String, Value)]) -> Value {
        let mut t = tenant;
        for (name, body) in apps {
            t[name.as_str()] = body.clone();
        }
        json!({"class": "ADC", "schemaVersion": "3.52.0", "id": "x", "t1": t})
    }

    /// The errors, as (where, what), in order.
    fn said(errors: &[ValidationError<'_>]) -> Vec<(String, String)> {
        errors.iter().map(|e| (e.instance_path().to_string(), e.to_string())).collect()
    }

    #[test]
    fn a_document_checked_by_parts_has_the_errors_of_the_whole() {
        let schema = validator().expect("the AS3 schema loads");
        let good =
            |n: usize| (0..n).map(|i| (format!("a{i:03}"), app(&format!("10.0.0.{}", i + 1)))).collect::<Vec<_>>();
        let tenant = json!({"class": "Tenant"});
        let mut bad = good(40);
        bad[7].1 = app("not-an-address");
        bad[31].1["vs"]["virtualPort"] = json!("eighty");
        // (what, the document)
        let rows: Vec<(&str, Value)> = vec![
            ("forty good applications", adc(tenant.clone(), &good(40))),
            ("two bad among forty", adc(tenant.clone(), &bad)),
            ("a tenant with no application", adc(tenant.clone(), &[])),
            ("the tenant's own property wrong", adc(json!({"class": "Tenant", "enable": "yes"}), &bad)),
            ("the tenant's class missing", adc(json!({"label": "x"}), &good(3))),
            ("an application's name illegal", adc(tenant.clone(), &[("9lives".into(), app("10.0.0.1"))])),
            ("the ADC's own property wrong", json!({"class": "ADC", "schemaVersion": 3, "t1": {"class": "Tenant"}})),
            ("a tenant that is not an object", json!({"class": "ADC", "schemaVersion": "3.52.0", "t1": "x"})),
        ];
        let cis = cis_validator().expect("CIS's schema loads");
        for (what, doc) in rows {
            // The ADC alone under the AS3 schema, and inside a request (as CIS posts it) under CIS's.
            let request = json!({"class": "AS3", "declaration": doc.clone()});
            for (schema, doc, adc_at) in [(schema, &doc, None), (cis, &request, Some("declaration"))] {
                let whole = said(&schema.validator.iter_errors(doc).take(MAX_ERRORS).collect::<Vec<_>>());
                // Twice: checked, then with the parts that passed remembered.
                for pass in ["first", "again"] {
                    assert_eq!(said(&schema.errors(doc, adc_at)), whole, "{what}, {pass}, in {adc_at:?}");
                }
            }
        }
    }

    #[test]
    fn a_part_is_remembered_by_its_content_and_its_shell() {
        let schema = validator().expect("the AS3 schema loads");
        let doc = adc(json!({"class": "Tenant"}), &[("a1".into(), app("10.0.0.1")), ("a2".into(), app("10.0.0.2"))]);
        assert!(schema.errors(&doc, None).is_empty(), "passes, and is remembered");
        let changed = adc(json!({"class": "Tenant"}), &[("a1".into(), app("10.0.0.1")), ("a2".into(), app("no"))]);
        assert_eq!(schema.errors(&changed, None).len(), 1, "the changed application is checked again");
        // A shell that fails is never remembered: the same application under it is checked.
        let shell = adc(json!({"class": "Tenant", "enable": 1}), &[("a1".into(), app("10.0.0.1"))]);
        for _ in 0..2 {
            let errors = said(&schema.errors(&shell, None));
            assert!(errors.len() == 1 && errors[0].0 == "/t1/enable", "{errors:?}");
        }
    }
}
