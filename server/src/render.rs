//! `lbdesk render -f FILE…`: the AS3 declarations the objects in YAML files produce, offline.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use app::domain::as3::{self, validate::validate};
use app::domain::crd::{Lbrule, Lbticket, Loadbalancer};
use app::domain::policy::{Refusal, validate_lb, validate_rule, validate_ticket};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// The objects read from the files.
#[derive(Default)]
pub struct Objects {
    pub loadbalancers: Vec<Loadbalancer>,
    pub tickets: Vec<Lbticket>,
    pub rules: Vec<Lbrule>,
}

fn typed<T: DeserializeOwned>(value: serde_yaml::Value, at: &str) -> anyhow::Result<T> {
    serde_yaml::from_value(value).map_err(|e| anyhow::anyhow!("{at}: {e}"))
}

fn checked(verdict: Result<(), Refusal>, at: &str) -> anyhow::Result<()> {
    verdict.map_err(|r| anyhow::anyhow!("{at}: {}{}", r.field.map(|f| format!("{f}: ")).unwrap_or_default(), r.reason))
}

/// Reads every YAML document of `files`; a bad document is an error naming file, document and field.
pub fn read(files: &[PathBuf]) -> anyhow::Result<Objects> {
    let mut objects = Objects::default();
    for file in files {
        let text = std::fs::read_to_string(file).with_context(|| format!("could not read {}", file.display()))?;
        for (i, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
            let at = format!("{} document {}", file.display(), i + 1);
            let value = serde_yaml::Value::deserialize(doc).map_err(|e| anyhow::anyhow!("{at}: not YAML: {e}"))?;
            if value.is_null() {
                continue;
            }
            let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or_default().to_string();
            let api = value.get("apiVersion").and_then(|k| k.as_str()).unwrap_or_default();
            if api != "ebcpaas.io/v1" {
                bail!("{at}: apiVersion must be ebcpaas.io/v1, not {api:?}");
            }
            let name = value
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(|n| n.as_str())
                .unwrap_or_default()
                .to_string();
            let at = format!("{at} ({kind} {name})");
            match kind.as_str() {
                "Loadbalancer" => {
                    let lb: Loadbalancer = typed(value, &at)?;
                    checked(validate_lb(&name, &lb.spec), &at)?;
                    objects.loadbalancers.push(lb);
                }
                "Lbticket" => {
                    let t: Lbticket = typed(value, &at)?;
                    checked(validate_ticket(&name, &t.spec), &at)?;
                    objects.tickets.push(t);
                }
                "Lbrule" => {
                    let r: Lbrule = typed(value, &at)?;
                    checked(validate_rule(&name, &r.spec, None), &at)?;
                    objects.rules.push(r);
                }
                other => bail!("{at}: kind must be Loadbalancer, Lbticket or Lbrule, not {other:?}"),
            }
        }
    }
    Ok(objects)
}

/// Every (cluster, tenant) declaration, validated: `{"<cluster>/<tenant>": ADC}`.
pub fn declarations(objects: &Objects) -> anyhow::Result<BTreeMap<String, serde_json::Value>> {
    let name = |m: &kube::api::ObjectMeta| m.name.clone().unwrap_or_default();
    let lb_names: Vec<String> = objects.loadbalancers.iter().map(|o| name(&o.metadata)).collect();
    let t_names: Vec<String> = objects.tickets.iter().map(|o| name(&o.metadata)).collect();
    let r_names: Vec<String> = objects.rules.iter().map(|o| name(&o.metadata)).collect();
    let lbs: Vec<_> = lb_names.iter().zip(&objects.loadbalancers).map(|(n, o)| (n.as_str(), &o.spec)).collect();
    let tickets: Vec<_> =
        t_names.iter().zip(&objects.tickets).map(|(n, o)| (n.as_str(), &o.spec, o.status.as_ref())).collect();
    let rules: Vec<_> = r_names.iter().zip(&objects.rules).map(|(n, o)| (n.as_str(), &o.spec)).collect();
    let mut out = BTreeMap::new();
    for ((cluster, tenant), (tickets, rules)) in as3::tenants(&lbs, &tickets, &rules) {
        let rendered =
            as3::render(&cluster, &tenant, &tickets, &rules).map_err(|f| anyhow::anyhow!("{cluster}/{tenant}: {f}"))?;
        for (rule, why) in &rendered.skipped {
            eprintln!("warning: rule {rule} not rendered: {why}");
        }
        if let Err(faults) = validate(&rendered) {
            let list: Vec<String> = faults.iter().map(|f| format!("  - {f}")).collect();
            bail!("{cluster}/{tenant}: the declaration is invalid:\n{}", list.join("\n"));
        }
        out.insert(format!("{cluster}/{tenant}"), serde_json::from_str(&rendered.adc).context("rendered JSON")?);
    }
    Ok(out)
}

/// `lbdesk render`.
pub fn run(files: &[PathBuf]) -> anyhow::Result<()> {
    if files.is_empty() {
        bail!("give at least one file with -f");
    }
    let out = declarations(&read(files)?)?;
    println!("{}", serde_json::to_string_pretty(&out).context("could not print")?);
    Ok(())
}
