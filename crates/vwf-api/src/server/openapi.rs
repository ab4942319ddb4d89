//! The OpenAPI 3.1 document of the API, built from `api::ROUTES` (the table the router mounts),
//! so a route cannot be served without being described, or described without being served.
//!
//! The document is exact, so that clients and fuzzers can trust it: every parameter has its type
//! and pattern (taken from the core's own constants: names, run ids, event names, time zones),
//! every request body its schema with its required fields, and every status a route can answer
//! its shape. Request schemas say what the server accepts structurally: a request that fits is
//! never a 400 for its shape, one that does not fit always is. A design or schedule problem is
//! not a structural one: it is a 200 whose body describes it (SPEC §13), so design graphs and
//! preview bodies are plain objects here. Links between operations (save → run → respond, retry,
//! open) let stateful clients follow a run from its design to its answers.

use schemars::generate::SchemaGenerator;
use serde_json::{Map, Value, json};
use vwf_core::names::{DesignName, RunId};
use vwf_core::trigger::EVENT_NAME_PATTERN;

use crate::contract::answers::*;
use crate::contract::requests::*;
use crate::contract::{self, queries, schema_of};
use crate::service::{Deleted, Enabled, Restored, Saved, VersionDiff};

use super::api::{API_PREFIX, Answer, Param, QueryKind, ROUTES, RequestBody, Route};
use vwf_runtime::schedules::{JOB_PREFIX, JobAction};

/// The document; `secured` when the server has an API token, which every call must then carry.
pub(crate) fn document(secured: bool) -> Value {
    generate(secured).0
}

/// The document, and the names of shared schemas the requests and the answers both define
/// differently (none: a test holds it; were there one, the answers' would stand).
fn generate(secured: bool) -> (Value, Vec<String>) {
    let mut generators = Generators { requests: contract::generator(), answers: contract::answer_generator() };
    let mut paths = Map::new();
    for route in ROUTES {
        let item = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        item[route.method.to_ascii_lowercase()] = operation(route, secured, &mut generators);
    }
    // Every error answer's body (see `error_responses`).
    schema_of::<Error>(&mut generators.answers);
    let mut components = contract::definitions(&mut generators.requests);
    let mut clashes = Vec::new();
    for (name, schema) in contract::definitions(&mut generators.answers) {
        if components.get(&name).is_some_and(|known| *known != schema) {
            clashes.push(name.clone());
        }
        components.insert(name, schema);
    }
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "visual-workflow",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Design, validate and durably run agent workflows. Every error answer is {ok:false, error}: \
                            400 malformed request, 401 missing or wrong token, 403 foreign Host or Origin, 404 missing \
                            design or run, 409 run not waiting or not retryable, or an idempotency key used for another request, 413 body over 1 MiB, 415 body not sent \
                            as JSON, 500 the store failed, 502 agent backend failed, 503 no agent backend, the store \
                            out of reach, or every run slot stayed taken (run, respond, retry; with Retry-After), 507 \
                            the store is full (with Retry-After). A design problem is a 200 whose body describes it."
        },
        "servers": [{"url": API_PREFIX}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "The API token ([server] token_env)."}
            },
            "schemas": components,
            "responses": error_responses(),
        }
    });
    if secured {
        doc["security"] = json!([{"bearer": []}]);
    }
    (doc, clashes)
}

/// Where the schemas of requests and of answers are generated (each type once; a request is
/// described as it is read, an answer as it is written).
struct Generators {
    requests: SchemaGenerator,
    answers: SchemaGenerator,
}

fn operation(route: &Route, secured: bool, generators: &mut Generators) -> Value {
    let names = params(route.path);
    let mut parameters: Vec<Value> = names
        .zip(route.path_params)
        .map(|(name, kind)| json!({"name": name, "in": "path", "required": true, "schema": param_schema(*kind, &mut generators.requests)}))
        .collect();
    parameters.extend(route.query.map(|query| query.parameters(&mut generators.requests)).unwrap_or_default());
    // The requests that start something take an idempotency key in a header, too.
    if matches!(route.body, Some(RequestBody::Run | RequestBody::Emit)) {
        let schema = schema_of::<crate::keys::IdempotencyKey>(&mut generators.requests);
        parameters.push(json!({"name": "Idempotency-Key", "in": "header", "required": false, "schema": schema,
            "description": "As idempotency_key in the body (give one, or the same in both)."}));
    }
    let mut responses = Map::new();
    let content = match route.answer {
        // `text/plain; version=0.0.4; charset=utf-8`: the media type is what a client matches.
        Answer::Metrics => {
            json!({"text/plain": {"schema": {"type": "string", "description": "The Prometheus text format, version 0.0.4."}}})
        }
        answer => json!({"application/json": {"schema": answer.schema(&mut generators.answers)}}),
    };
    let mut ok = json!({"description": "OK", "content": content});
    if let Some(links) = links(route) {
        ok["links"] = links;
    }
    responses.insert("200".into(), ok);
    let mut errors = vec![400, 403];
    if secured {
        errors.push(401);
    }
    errors.extend_from_slice(route.errors);
    // A route that reaches the store (it may answer 500) may also find it out of reach or full.
    if route.errors.contains(&500) {
        errors.extend([503, 507]);
    }
    errors.sort_unstable();
    errors.dedup();
    for status in errors {
        responses.insert(status.to_string(), json!({"$ref": format!("#/components/responses/{status}")}));
    }
    let mut op = json!({
        "operationId": operation_id(route),
        "summary": route.summary,
        "parameters": parameters,
        "responses": responses,
    });
    if let Some(body) = route.body {
        let (required, schema) = body.schema(&mut generators.requests);
        op["requestBody"] = json!({"required": required, "content": {"application/json": {"schema": schema}}});
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

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn param_schema(kind: Param, generator: &mut SchemaGenerator) -> Value {
    match kind {
        Param::DesignName => json!({"type": "string", "pattern": DesignName::PATTERN}),
        Param::RunId => json!({"type": "string", "pattern": RunId::PATTERN}),
        Param::JobId => {
            json!({"type": "string", "pattern": format!("^{JOB_PREFIX}{}", DesignName::PATTERN.trim_start_matches('^'))})
        }
        Param::ScheduleAction => json!({"type": "string", "enum": JobAction::ALL.map(JobAction::as_str)}),
        Param::EventName => json!({"type": "string", "pattern": EVENT_NAME_PATTERN}),
        Param::Version => schema_of::<queries::Version>(generator),
    }
}

impl QueryKind {
    /// The query's parameters, from the type it is read as.
    fn parameters(self, generator: &mut SchemaGenerator) -> Vec<Value> {
        match self {
            QueryKind::Models => queries::parameters::<queries::ModelsQuery>(generator),
            QueryKind::Diff => queries::parameters::<queries::DiffQuery>(generator),
            QueryKind::Validate => queries::parameters::<queries::ValidateQuery>(generator),
            QueryKind::Runs => queries::parameters::<queries::RunsQuery>(generator),
            QueryKind::Stats => queries::parameters::<queries::StatsQuery>(generator),
            QueryKind::Run => queries::parameters::<queries::RunQuery>(generator),
        }
    }
}

impl RequestBody {
    /// Whether the body is required, and its schema (generated from the type it is read as;
    /// shared definitions land in `generator`).
    fn schema(self, generator: &mut SchemaGenerator) -> (bool, Value) {
        match self {
            RequestBody::Save => (true, schema_of::<SaveRequest>(generator)),
            RequestBody::Validate => (false, schema_of::<ValidateRequest>(generator)),
            RequestBody::Run => (false, schema_of::<RunRequest>(generator)),
            RequestBody::Emit => (false, schema_of::<EmitRequest>(generator)),
            RequestBody::Import => (true, schema_of::<ImportRequest>(generator)),
            RequestBody::Schedule => (true, schema_of::<ScheduleRequest>(generator)),
            RequestBody::Preview => (false, schema_of::<PreviewRequest>(generator)),
            RequestBody::Restore => (true, schema_of::<RestoreRequest>(generator)),
            RequestBody::Pin => (true, schema_of::<PinRequest>(generator)),
            RequestBody::Respond => (true, schema_of::<RespondRequest>(generator)),
            RequestBody::Retry => (false, schema_of::<RetryRequest>(generator)),
        }
    }

    /// Reads `body` as the handler reads it (the type, then the rules across its fields), so a
    /// test can hold each route's example to its parser.
    #[cfg(test)]
    fn read(self, body: Value) -> Result<(), crate::failure::Failure> {
        use crate::contract::parse;
        match self {
            RequestBody::Save => parse::<SaveRequest>(body).map(drop),
            RequestBody::Validate => parse::<ValidateRequest>(body).map(drop),
            RequestBody::Run => parse::<RunRequest>(body)?.0.start().map(drop),
            RequestBody::Emit => parse::<EmitRequest>(body).map(drop),
            RequestBody::Import => parse::<ImportRequest>(body).map(drop),
            RequestBody::Schedule => {
                let ScheduleRequest(body) = parse(body)?;
                vwf_core::schedule::schedule_from_value(&body).map(drop).map_err(|e| crate::failure::Failure::BadRequest(e.message))
            }
            RequestBody::Preview => parse::<PreviewRequest>(body).map(drop),
            RequestBody::Restore => parse::<RestoreRequest>(body).map(drop),
            RequestBody::Pin => parse::<PinRequest>(body)?.pin().map(drop),
            RequestBody::Respond => parse::<RespondRequest>(body)?.answer("api").map(drop),
            RequestBody::Retry => parse::<RetryRequest>(body).map(drop),
        }
    }
}

impl Answer {
    /// The schema of a 200 answer, generated from the type the handler serialises (shared
    /// definitions land in `generator`).
    fn schema(self, generator: &mut SchemaGenerator) -> Value {
        let mut g = |f: fn(&mut SchemaGenerator) -> Value| f(generator);
        match self {
            Answer::Models => g(schema_of::<Done<Models>>),
            Answer::Profiles => g(schema_of::<Done<Profiles>>),
            Answer::Channels => g(schema_of::<Done<Channels>>),
            Answer::Designs => g(schema_of::<Done<Designs>>),
            Answer::Templates => g(schema_of::<Done<Templates>>),
            Answer::Design => any_of([g(schema_of::<Done<Loaded>>), g(schema_of::<Done<Templates>>)]),
            Answer::Saved => any_of([g(schema_of::<Done<Saved>>), g(schema_of::<Refusal>)]),
            Answer::Deleted => g(schema_of::<Done<Deleted>>),
            Answer::Enabled => any_of([g(schema_of::<Done<Enabled>>), g(schema_of::<Refusal>)]),
            Answer::Versions => g(schema_of::<Done<Versions>>),
            Answer::Version => g(schema_of::<Done<VersionGraph>>),
            Answer::Diff => g(schema_of::<Done<VersionDiff>>),
            Answer::Restored => any_of([g(schema_of::<Done<Restored>>), g(schema_of::<Refusal>)]),
            Answer::Report => g(schema_of::<Checked>),
            Answer::RunStarted => any_of([g(schema_of::<RunResult>), g(schema_of::<Refusal>)]),
            Answer::Jobs => g(schema_of::<Done<Jobs>>),
            Answer::Job => g(schema_of::<Done<JobAnswer>>),
            Answer::Preview => g(schema_of::<Preview>),
            Answer::ScheduleAction => {
                any_of([g(schema_of::<Done<JobAnswer>>), g(schema_of::<Done<Removed>>), g(schema_of::<RunResult>), g(schema_of::<Refusal>)])
            }
            Answer::Runs => g(schema_of::<Done<Runs>>),
            Answer::Stats => g(schema_of::<Done<vwf_core::stats::Report>>),
            Answer::Run => g(schema_of::<RunResult>),
            Answer::Emitted => g(schema_of::<Done<Emitted>>),
            Answer::Schema => g(schema_of::<DesignModel>),
            Answer::Imported => g(schema_of::<Imported>),
            Answer::OpenApi => g(schema_of::<OpenApi>),
            Answer::Metrics => json!({"type": "string"}),
        }
    }
}

fn any_of<const N: usize>(schemas: [Value; N]) -> Value {
    json!({"anyOf": schemas.to_vec()})
}

/// Links from an operation's 200 answer to the operations that continue from it.
fn links(route: &Route) -> Option<Value> {
    let run_id = "$response.body#/run_id";
    let continue_run = || {
        json!({
            "open": {"operationId": "get_runs_runid", "parameters": {"run_id": run_id}},
            "answer": {"operationId": "post_runs_runid_respond", "parameters": {"run_id": run_id},
                       "requestBody": {"node": "$response.body#/pending/node", "answer": "$response.body#/pending/options/0"}},
            "respond": {"operationId": "post_runs_runid_respond", "parameters": {"run_id": run_id},
                        "requestBody": {"node": "$response.body#/pending/node"}},
            "retry": {"operationId": "post_runs_runid_retry", "parameters": {"run_id": run_id}},
        })
    };
    // From the answer, not the request: a refused save (a 200 describing the design's problems)
    // names nothing, so nothing follows it.
    let name = "$response.body#/name";
    Some(match (route.method, route.path) {
        ("POST", "/designs/{name}") => json!({
            "load": {"operationId": "get_designs_name", "parameters": {"name": name}},
            "validate": {"operationId": "post_designs_name_validate", "parameters": {"name": name}},
            "run": {"operationId": "post_designs_name_run", "parameters": {"name": name}},
            "schedule": {"operationId": "post_designs_name_schedule", "parameters": {"name": name}},
        }),
        ("POST", "/designs/{name}/schedule") => {
            let job = "$response.body#/job/job_id";
            json!({
                "act": {"operationId": "post_schedules_jobid_action", "parameters": {"job_id": job}},
            })
        }
        ("POST", "/designs/{name}/run" | "/runs/{run_id}/respond" | "/runs/{run_id}/retry") | ("GET", "/runs/{run_id}") => continue_run(),
        ("GET", "/runs") => json!({
            "open": {"operationId": "get_runs_runid", "parameters": {"run_id": "$response.body#/runs/0/run_id"}},
            "more": {"operationId": "get_runs", "parameters": {"before": "$response.body#/next"}},
        }),
        ("POST", "/events/{name}") => json!({
            "open": {"operationId": "get_runs_runid", "parameters": {"run_id": "$response.body#/runs/0/run_id"}},
        }),
        _ => return None,
    })
}

/// The error answers, one per status.
fn error_responses() -> Value {
    let what = [
        (
            400,
            "Malformed request: bad JSON, a missing or mistyped field, a bad name or id, an answer not among the options, two Host headers.",
        ),
        (401, "Missing or wrong API token."),
        (403, "Foreign Host or Origin."),
        (404, "No such design, run, node or schedule job."),
        (409, "The run is not waiting on that node, or not retryable; or the idempotency key was used for another request."),
        (413, "Body over 1 MiB."),
        (415, "Body not sent as JSON."),
        (500, "The store failed (permissions, damage); the body names no file of the server's, its log says more."),
        (502, "The agent backend failed."),
        (
            503,
            "No agent backend is configured, the store cannot be reached now (with Retry-After), or the server is \
             busy: every run slot stayed taken while the request waited (run, respond, retry, events, a schedule \
             job's run; then with Retry-After).",
        ),
        (507, "The store is full: nothing was saved (with Retry-After)."),
    ];
    let mut out = Map::new();
    for (status, description) in what {
        let mut response = json!({"description": description, "content": {"application/json": {"schema": reference("Error")}}});
        if status == 503 || status == 507 {
            response["headers"] = json!({"Retry-After": {
                "description": "Seconds to wait before sending the request again; sent when the server is busy or the store cannot take the request now.",
                "schema": {"type": "integer", "minimum": 1}
            }});
        }
        out.insert(status.to_string(), response);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_described_once_with_its_parameters() {
        for secured in [false, true] {
            let doc = document(secured);
            let mut ids = std::collections::HashSet::new();
            for route in ROUTES {
                let op = &doc["paths"][route.path][route.method.to_ascii_lowercase()];
                assert_eq!(op["summary"], route.summary, "{} {}", route.method, route.path);
                assert!(ids.insert(op["operationId"].as_str().unwrap().to_string()), "duplicate operationId for {}", route.path);
                let declared: Vec<&str> = op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["in"] == "path")
                    .map(|p| p["name"].as_str().unwrap())
                    .collect();
                assert_eq!(declared, params(route.path).collect::<Vec<_>>());
                assert_eq!(route.path_params.len(), declared.len(), "{}", route.path);
                assert_eq!(op["responses"].get("401").is_some(), secured);
                for (status, response) in op["responses"].as_object().unwrap() {
                    if let Some(target) = response["$ref"].as_str() {
                        let key = target.rsplit('/').next().unwrap();
                        assert!(doc["components"]["responses"][key].is_object(), "{status} of {}", route.path);
                    }
                }
            }
            let count: usize = doc["paths"].as_object().unwrap().values().map(|item| item.as_object().unwrap().len()).sum();
            assert_eq!(count, ROUTES.len());
            assert_eq!(doc.get("security").is_some(), secured);
        }
    }

    /// A shared schema's name means one schema: the requests' and the answers' definitions agree
    /// wherever they share a name.
    #[test]
    fn requests_and_answers_share_no_name_with_two_schemas() {
        assert_eq!(generate(false).1, Vec::<String>::new());
    }

    /// Every request body's examples, as the document states them, are read by the handler's
    /// parser without a complaint; and every body a route takes has one.
    #[test]
    fn every_example_is_read_by_its_parser() {
        let doc = document(false);
        let mut read = 0;
        for route in ROUTES {
            let Some(body) = route.body else { continue };
            let schema =
                &doc["paths"][route.path][route.method.to_ascii_lowercase()]["requestBody"]["content"]["application/json"]["schema"];
            let schema = match schema["$ref"].as_str() {
                Some(target) => &doc["components"]["schemas"][target.rsplit('/').next().unwrap()],
                None => schema,
            };
            let examples = schema["examples"].as_array().cloned().unwrap_or_default();
            let optional = !doc["paths"][route.path][route.method.to_ascii_lowercase()]["requestBody"]["required"].as_bool().unwrap();
            assert!(optional || !examples.is_empty(), "{} {} takes a body and shows no example", route.method, route.path);
            for example in examples {
                body.read(example.clone()).unwrap_or_else(|e| panic!("{} {}: {example} is refused: {e}", route.method, route.path));
                read += 1;
            }
            // A body that is not there is `{}`: a route whose body is optional reads it.
            if optional {
                body.read(json!({})).unwrap_or_else(|e| panic!("{} {}: {{}} is refused: {e}", route.method, route.path));
            }
        }
        assert!(read >= 8, "{read} examples");
    }

    /// The tools' examples (a route's body plus the name or id the route has in its path) are
    /// read by the tools' parsers.
    #[test]
    fn tool_examples_are_read_by_their_parsers() {
        use crate::contract::{Both, parse};
        fn example<T: schemars::JsonSchema>() -> Value {
            T::json_schema(&mut contract::generator()).to_value()["examples"][0].clone()
        }
        parse::<SaveTool>(example::<SaveTool>()).unwrap();
        parse::<RunTool>(example::<RunTool>()).unwrap().1.start().unwrap();
        parse::<RespondTool>(example::<RespondTool>()).unwrap().1.answer("mcp").unwrap();
        parse::<ValidateArgs>(example::<ValidateArgs>()).unwrap();
        let Both(NameArg { name }, _) = parse::<LoadTool>(json!({"name": "hello", "version": 3.0})).unwrap();
        assert_eq!(name.0.as_str(), "hello");
    }

    /// A request that does not fit is refused with the field it is about, in the contract's
    /// words.
    #[test]
    fn misfits_name_their_field() {
        use crate::contract::parse;
        let says = |body: Value, kind: RequestBody| kind.read(body).unwrap_err().to_string();
        assert_eq!(says(json!({}), RequestBody::Save), "missing \"graph\"");
        assert_eq!(says(json!({"graph": {}, "create": "yes"}), RequestBody::Save), "\"create\" must be true or false");
        assert_eq!(
            says(json!({"graph": "text"}), RequestBody::Save),
            "\"graph\" must be a JSON object (the design document), got a string"
        );
        assert_eq!(says(json!({"version": 0}), RequestBody::Restore), "\"version\" must be a version number (a whole number from 1)");
        assert_eq!(says(json!({"version": 1.5}), RequestBody::Restore), "\"version\" must be a version number (a whole number from 1)");
        assert_eq!(says(json!({"version": "1"}), RequestBody::Restore), "\"version\" must be a version number (a whole number from 1)");
        assert_eq!(says(json!({"from": "middle"}), RequestBody::Retry), "\"from\" must be \"failed\" or \"start\", not \"middle\"");
        assert_eq!(says(json!({"node": 3}), RequestBody::Respond), "\"node\" must be a string");
        assert_eq!(
            says(json!({"node": "g", "answer": "a", "output": "b"}), RequestBody::Respond),
            "give exactly one of \"answer\", \"output\" or \"agent_generate\": true"
        );
        assert_eq!(
            says(json!({"node": "g", "from_run": "nope"}), RequestBody::Pin),
            "bad run id \"nope\": a run id is 12 lowercase hex characters"
        );
        assert_eq!(says(json!({"only": "a", "until": "b"}), RequestBody::Run), "give \"only\" or \"until\", not both");
        let tool = parse::<SaveTool>(json!({"name": "../x", "graph": {}})).unwrap_err().to_string();
        assert!(tool.starts_with("bad design name"), "{tool}");
        assert_eq!(parse::<SaveTool>(json!({"name": 1})).unwrap_err().to_string(), "\"name\" must be a string");
        assert_eq!(
            parse::<ListArgs>(json!({"limit": 0})).unwrap_err().to_string(),
            "\"limit\" must be a whole number from 1 to 1000, not 0"
        );
    }

    #[test]
    fn links_name_existing_operations_and_parameters() {
        let doc = document(false);
        let ops: std::collections::HashMap<String, &Value> = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .map(|op| (op["operationId"].as_str().unwrap().to_string(), op))
            .collect();
        let mut seen = 0;
        for op in ops.values() {
            for link in op["responses"]["200"]["links"].as_object().into_iter().flatten().map(|(_, l)| l) {
                let target = ops.get(link["operationId"].as_str().unwrap()).unwrap_or_else(|| panic!("{link}"));
                for name in link["parameters"].as_object().unwrap().keys() {
                    assert!(target["parameters"].as_array().unwrap().iter().any(|p| p["name"] == *name), "{name} in {link}");
                }
                seen += 1;
            }
        }
        assert!(seen >= 10, "{seen} links");
    }
}
