//! The OpenAPI 3.1 document of the API, built from `api::ROUTES` (the table the router mounts),
//! so a route cannot be served without being described, or described without being served.

use serde_json::{Map, Value, json};

use super::api::{API_PREFIX, ROUTES, Route};

pub(crate) fn document() -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let item = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        item[route.method.to_ascii_lowercase()] = operation(route);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "visual-workflow",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Design, validate and durably run agent workflows. Every error answer is {ok:false, error}: \
                            400 malformed request, 401 missing or wrong token, 403 foreign Host or Origin, 404 missing \
                            design or run, 409 run not waiting or not retryable, 413 body over 1 MiB, 502 agent backend \
                            failed, 503 no agent backend. A design problem is a 200 whose body describes it."
        },
        "servers": [{"url": API_PREFIX}],
        "security": [{}, {"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "Required when the server has a token ([server] token_env)."}
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["ok", "error"],
                    "properties": {"ok": {"const": false}, "error": {"type": "string"}}
                },
                "Answer": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "additionalProperties": true}
            },
            "responses": {
                "Error": {
                    "description": "{ok:false, error}",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
                }
            }
        }
    })
}

fn operation(route: &Route) -> Value {
    let mut parameters: Vec<Value> = params(route.path)
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    parameters.extend(route.query.iter().map(|(name, what)| json!({"name": name, "in": "query", "required": false, "description": what, "schema": {"type": "string"}})));
    let mut op = json!({
        "operationId": operation_id(route),
        "summary": route.summary,
        "parameters": parameters,
        "responses": {
            "200": {
                "description": route.answer,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Answer"}}}
            },
            "default": {"$ref": "#/components/responses/Error"}
        }
    });
    if let Some(body) = route.body {
        op["requestBody"] = json!({
            "required": false,
            "description": body,
            "content": {"application/json": {"schema": {"type": "object"}}}
        });
    }
    op
}

/// The `{param}` names of a path, in order.
fn params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// `POST /designs/{name}/run` → `post_designs_name_run`.
fn operation_id(route: &Route) -> String {
    let mut id = route.method.to_ascii_lowercase();
    for seg in route.path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        id.extend(seg.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_described_once_with_its_parameters() {
        let doc = document();
        let mut ids = std::collections::HashSet::new();
        for route in ROUTES {
            let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
            assert_eq!(op["summary"], route.summary, "{} {}", route.method, route.path);
            assert!(ids.insert(op["operationId"].as_str().unwrap().to_string()), "duplicate operationId for {}", route.path);
            let declared: Vec<&str> = op["parameters"].as_array().unwrap().iter().filter(|p| p["in"] == "path").map(|p| p["name"].as_str().unwrap()).collect();
            assert_eq!(declared, params(route.path).collect::<Vec<_>>());
        }
        let count: usize = doc["paths"].as_object().unwrap().values().map(|item| item.as_object().unwrap().len()).sum();
        assert_eq!(count, ROUTES.len());
    }
}
