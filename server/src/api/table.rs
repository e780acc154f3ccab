//! Server-side printing: `meta.k8s.io/v1` Tables from the printer columns, for `kubectl get`.

use serde_json::{Value, json};

use super::resources::Kind;

/// The value at a dotted path such as `.status.phase`.
fn at_path<'a>(object: &'a Value, path: &str) -> &'a Value {
    path.trim_start_matches('.').split('.').filter(|p| !p.is_empty()).fold(object, |v, p| &v[p])
}

/// `5s`, `3m12s`, `4h`, `2d` — as kubectl shows ages.
pub fn human_age(seconds: i64) -> String {
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 && s % 60 != 0 => format!("{m}m{}s", s % 60),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 && m % 60 != 0 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if d < 8 && h % 24 != 0 => format!("{d}d{}h", h % 24),
        _ if d < 730 => format!("{d}d"),
        _ => format!("{}y", d / 365),
    }
}

fn age(timestamp: &Value) -> Value {
    let parsed = timestamp
        .as_str()
        .and_then(|t| time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok());
    match parsed {
        Some(t) => json!(human_age((time::OffsetDateTime::now_utc() - t).whole_seconds())),
        None => Value::Null,
    }
}

fn cell(column_type: &str, value: &Value) -> Value {
    match (column_type, value) {
        ("date", v) => age(v),
        (_, Value::Null) => Value::Null,
        (_, v) => v.clone(),
    }
}

/// A Table of `objects`, whole objects included in the rows.
pub fn table(kind: &Kind, objects: &[Value], resource_version: &str) -> Value {
    let mut columns = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name of the object", "priority": 0}),
    ];
    columns.extend(
        kind.columns
            .iter()
            .map(|c| json!({"name": c.name, "type": c.type_, "format": "", "description": c.json_path, "priority": 0})),
    );
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut cells = vec![o["metadata"]["name"].clone()];
            cells.extend(kind.columns.iter().map(|c| cell(&c.type_, at_path(o, &c.json_path))));
            json!({"cells": cells, "object": o})
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resources::find;

    #[test]
    fn ages_read_like_kubectl() {
        for (s, want) in [
            (5, "5s"),
            (119, "119s"),
            (130, "2m10s"),
            (600, "10m"),
            (7200, "120m"),
            (3 * 3600 + 60, "3h1m"),
            (50 * 3600, "2d2h"),
            (30 * 86400, "30d"),
        ] {
            assert_eq!(human_age(s), want, "{s}");
        }
    }

    #[test]
    fn ticket_tables_show_phase_and_addresses() {
        let kind = find("ebcpaas.io", "v1", "lbtickets", true).expect("kind");
        let t = json!({"metadata": {"name": "t1", "creationTimestamp": "2020-01-01T00:00:00Z"}, "spec": {"loadbalancer": "demo"}, "status": {"phase": "Enabled", "veip": "20.1.0.10", "ltmip": "10.0.0.10"}});
        let table = table(kind, &[t], "9");
        let names: Vec<&str> =
            table["columnDefinitions"].as_array().expect("columns").iter().filter_map(|c| c["name"].as_str()).collect();
        assert_eq!(names, ["Name", "Phase", "VEIP", "LTMIP", "Loadbalancer", "Age"]);
        let cells = &table["rows"][0]["cells"];
        assert_eq!(cells[0], "t1");
        assert_eq!(cells[1], "Enabled");
        assert_eq!(cells[2], "20.1.0.10");
        assert_eq!(cells[4], "demo");
        assert!(cells[5].as_str().is_some_and(|a| a.ends_with('y') || a.ends_with('d')));
    }
}
