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

use serde_json::{Map, Value, json};
use vwf_core::limits::LIVE_WAIT_SECONDS;
use vwf_core::listing::{STATUSES, TRIGGER_MODES};
use vwf_core::names::{DesignName, RunId};
use vwf_core::schedule::time_zone_names;
use vwf_core::trigger::EVENT_NAME_PATTERN;

use super::api::{API_PREFIX, Answer, Param, ROUTES, RUNS_MAX, RequestBody, Route};
use super::extract::FLAG_VALUES;
use super::live::STAMP_PATTERN;
use vwf_runtime::schedules::{ACTION_NAMES, JOB_PREFIX};

/// The document; `secured` when the server has an API token, which every call must then carry.
pub(crate) fn document(secured: bool) -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let item = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        item[route.method.to_ascii_lowercase()] = operation(route, secured);
    }
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "visual-workflow",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Design, validate and durably run agent workflows. Every error answer is {ok:false, error}: \
                            400 malformed request, 401 missing or wrong token, 403 foreign Host or Origin, 404 missing \
                            design or run, 409 run not waiting or not retryable, 413 body over 1 MiB, 415 body not sent \
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
            "schemas": schemas(),
            "responses": error_responses(),
        }
    });
    if secured {
        doc["security"] = json!([{"bearer": []}]);
    }
    doc
}

fn operation(route: &Route, secured: bool) -> Value {
    let names = params(route.path);
    let mut parameters: Vec<Value> = names
        .zip(route.path_params)
        .map(|(name, kind)| json!({"name": name, "in": "path", "required": true, "schema": param_schema(*kind)}))
        .collect();
    parameters.extend(route.query.iter().map(
        |(name, what, kind)| json!({"name": name, "in": "query", "required": false, "description": what, "schema": param_schema(*kind)}),
    ));
    let mut responses = Map::new();
    let content = match route.answer {
        // `text/plain; version=0.0.4; charset=utf-8`: the media type is what a client matches.
        Answer::Metrics => {
            json!({"text/plain": {"schema": {"type": "string", "description": "The Prometheus text format, version 0.0.4."}}})
        }
        answer => json!({"application/json": {"schema": answer_schema(answer)}}),
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
        let (required, schema) = body_schema(body);
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

fn param_schema(kind: Param) -> Value {
    match kind {
        Param::DesignName => json!({"type": "string", "pattern": DesignName::PATTERN}),
        Param::RunId => json!({"type": "string", "pattern": RunId::PATTERN}),
        Param::JobId => {
            json!({"type": "string", "pattern": format!("^{JOB_PREFIX}{}", DesignName::PATTERN.trim_start_matches('^'))})
        }
        Param::ScheduleAction => json!({"type": "string", "enum": ACTION_NAMES}),
        Param::EventName => json!({"type": "string", "pattern": EVENT_NAME_PATTERN}),
        Param::Status => json!({"type": "string", "enum": STATUSES}),
        Param::Trigger => json!({"type": "string", "enum": TRIGGER_MODES}),
        Param::RunIdPrefix => json!({"type": "string", "pattern": "^[0-9a-f]{1,12}$"}),
        Param::Limit => json!({"type": "integer", "minimum": 1, "maximum": RUNS_MAX, "default": 20}),
        Param::Flag => json!({"type": "string", "enum": FLAG_VALUES.map(|(spelling, _)| spelling), "default": "0"}),
        Param::Stamp => stamp(),
        // A version is a u64: a larger number is refused by the parser, so the schema says so too.
        Param::Version => json!({"type": "integer", "minimum": 1, "maximum": u64::MAX}),
        // Any whole number: a wait over the limit is cut to it.
        Param::Wait => {
            json!({"type": "integer", "minimum": 0, "default": 0, "description": format!("At most {LIVE_WAIT_SECONDS} seconds are waited.")})
        }
    }
}

/// Whether the body is required, and its schema.
fn body_schema(body: RequestBody) -> (bool, Value) {
    let object = |required: &[&str], properties: Value| json!({"type": "object", "required": required, "properties": properties});
    let graph = json!({"type": "object", "description": "A design document (SPEC §2); a design problem is answered, not refused."});
    // `only` and `until` are not given together.
    let with_not_both = |mut schema: Value| {
        schema["not"] = json!({"required": ["only", "until"], "properties": {"only": {"type": "string"}, "until": {"type": "string"}}});
        schema
    };
    let with_example = |mut schema: Value, example: Value| {
        schema["examples"] = json!([example]);
        schema
    };
    match body {
        RequestBody::Save => (
            true,
            with_example(
                object(
                    &["graph"],
                    json!({"graph": graph, "create": {"type": ["boolean", "null"], "description": "true: save only under a name no design has (else 409)."}}),
                ),
                json!({"graph": example_design()}),
            ),
        ),
        RequestBody::Validate => (false, object(&[], json!({"graph": graph}))),
        RequestBody::Run => (
            false,
            with_example(
                with_not_both(object(
                    &[],
                    json!({
                        "input": {"description": "The trigger input, any JSON. A test run limited by only or until takes the newest run's input when given none."},
                        "wait": {"type": ["boolean", "null"], "description": "false: answer once the run is saved (status running) and run it on in the background."},
                        "test": {"type": ["boolean", "null"], "description": "true: a test run; pinned steps give their pinned output instead of running (no command, HTTP call, model or delivery)."},
                        "only": {"type": ["string", "null"], "description": "A test run of this step alone: the steps before it give their pins or the newest output past runs have."},
                        "until": {"type": ["string", "null"], "description": "A test run of this step and every step leading to it."}
                    }),
                )),
                json!({"input": {"topic": "tea"}}),
            ),
        ),
        RequestBody::Emit => (
            false,
            with_example(object(&[], json!({"payload": {"description": "The event payload, any JSON."}})), json!({"payload": {"n": 1}})),
        ),
        RequestBody::Import => (
            true,
            with_example(
                object(
                    &["document"],
                    json!({
                        "document": {"type": "object", "description": "An agent.json document: {workflows: {name: workflow, ...}} (or a list, or one workflow)."},
                        "overwrite": {"type": ["boolean", "null"], "description": "true: replace designs that have a workflow's name (else they are skipped)."}
                    }),
                ),
                json!({"document": {"workflows": {"hello": {"trigger": {"type": "manual"}, "activities": []}}}}),
            ),
        ),
        RequestBody::Schedule => {
            (true, with_example(reference("ScheduleRequest"), json!({"preset": "daily", "time": "09:00", "tz": "Europe/Berlin"})))
        }
        RequestBody::Preview => (
            false,
            json!({"type": "object", "description": "A schedule object ({preset, time?, minute?, dow?, cron?, tz?}); \
                                                   what is wrong with it is the answer ({ok:false, error, field})."}),
        ),
        RequestBody::Restore => (
            true,
            with_example(
                object(
                    &["version"],
                    json!({"version": {"type": "integer", "minimum": 1, "maximum": u64::MAX, "description": "The version to restore."}}),
                ),
                json!({"version": 1}),
            ),
        ),
        RequestBody::Pin => (
            true,
            with_example(
                {
                    let mut schema = object(
                        &["node"],
                        json!({
                            "node": {"type": "string", "description": "The step to pin."},
                            "output": {"description": "The pinned output: a text, or an output view like {\"text\": \"...\", \"data\": ...}. A condition's pin needs value, an approval's answer."},
                            "from_run": {"type": ["string", "null"], "pattern": RunId::PATTERN, "description": "Pin what the step gave in this run."},
                            "remove": {"type": ["boolean", "null"], "description": "true: remove the step's pin."}
                        }),
                    );
                    // Exactly one of the three.
                    schema["oneOf"] = json!([
                        {"required": ["output"], "properties": {"output": {"not": {"type": "null"}}}},
                        {"required": ["from_run"], "properties": {"from_run": {"type": "string"}}},
                        {"required": ["remove"], "properties": {"remove": {"const": true}}}
                    ]);
                    schema
                },
                json!({"node": "fetch", "output": {"text": "{\"items\": [1, 2]}"}}),
            ),
        ),
        RequestBody::Respond => (true, with_example(reference("RespondRequest"), json!({"node": "gate", "answer": "send"}))),
        RequestBody::Retry => (
            false,
            with_example(
                object(
                    &[],
                    json!({"from": {"enum": ["failed", "start", null], "description": "failed (the default): resume the failed run at its failed step with the plan it started with; start: a new run of the design's current version with the same input, linked by retry_of (any finished run)."}}),
                ),
                json!({"from": "start"}),
            ),
        ),
    }
}

/// The example of a save: a manual trigger, an approval gate and an output, so that following
/// the links (run, answer) reaches a parked run and a finished one.
fn example_design() -> Value {
    json!({
        "description": "asks before it says hello",
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Send it?", "options": ["send", "skip"], "timeout_minutes": 60},
            {"id": "say", "type": "output", "template": "hello from {{run.design}}"}
        ],
        "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "say", "label": "send"}]
    })
}

fn answer_schema(answer: Answer) -> Value {
    let list = |key: &str, items: Value| json!({"type": "object", "required": ["ok", key], "properties": {"ok": {"const": true}, key: {"type": "array", "items": items}}});
    match answer {
        Answer::Models => list("models", json!({"type": "string"})),
        Answer::Profiles => {
            let mut profiles = list("profiles", reference("Profile"));
            profiles["required"] = json!(["ok", "profiles", "backend"]);
            profiles["properties"]["backend"] = json!({"enum": ["openai", "command", null], "description": "The agent backend; null when none is configured (GET /models then answers 503)."});
            profiles
        }
        Answer::Channels => list("channels", reference("Channel")),
        Answer::Designs => {
            let name = json!({"type": "string", "pattern": DesignName::PATTERN});
            let mut designs = list("designs", name.clone());
            designs["properties"]["disabled"] =
                json!({"type": "array", "items": name, "description": "The designs whose automatic trigger is off (\"enabled\": false)."});
            designs
        }
        Answer::Templates => reference("Templates"),
        Answer::Design => json!({"anyOf": [
            {"type": "object", "required": ["ok", "graph"], "properties": {"ok": {"const": true}, "graph": {"type": "object"}}, "additionalProperties": false},
            reference("Templates"),
        ]}),
        Answer::Saved => json!({"anyOf": [
            {"type": "object", "required": ["ok", "name", "path", "nodes"], "additionalProperties": false,
             "properties": {"ok": {"const": true}, "name": {"type": "string", "pattern": DesignName::PATTERN}, "path": {"type": "string"}, "nodes": {"type": "integer", "minimum": 0}}},
            reference("Refusal"),
        ]}),
        Answer::Enabled => json!({"anyOf": [
            {"type": "object", "required": ["ok", "name", "enabled"], "additionalProperties": false,
             "properties": {"ok": {"const": true}, "name": {"type": "string", "pattern": DesignName::PATTERN}, "enabled": {"type": "boolean"}}},
            reference("Refusal"),
        ]}),
        Answer::Deleted => json!({
            "type": "object", "required": ["ok", "name", "deleted", "schedule"], "additionalProperties": false,
            "properties": {
                "ok": {"const": true}, "name": {"type": "string", "pattern": DesignName::PATTERN}, "deleted": {"const": true},
                "schedule": {"description": "The design's schedule job, now paused, or null when it had none.", "anyOf": [{"type": "null"}, reference("Job")]}
            }
        }),
        Answer::Versions => json!({
            "type": "object", "required": ["ok", "name", "versions"], "additionalProperties": false,
            "properties": {"ok": {"const": true}, "name": {"type": "string", "pattern": DesignName::PATTERN}, "versions": {"type": "array", "items": {
                "type": "object", "required": ["version", "hash", "saved_at", "nodes", "edges"], "additionalProperties": false,
                "properties": {"version": {"type": "integer", "minimum": 1}, "hash": {"type": "string"}, "saved_at": time(),
                               "nodes": {"type": "integer", "minimum": 0}, "edges": {"type": "integer", "minimum": 0}}
            }}}
        }),
        Answer::Version => json!({
            "type": "object", "required": ["ok", "name", "version", "hash", "saved_at", "graph"], "additionalProperties": false,
            "properties": {"ok": {"const": true}, "name": {"type": "string", "pattern": DesignName::PATTERN}, "version": {"type": "integer", "minimum": 1},
                           "hash": {"type": "string"}, "saved_at": time(), "graph": {"type": "object"}}
        }),
        Answer::Diff => {
            let changes = json!({
                "type": "object", "required": ["added", "removed", "changed", "unchanged"], "additionalProperties": false,
                "properties": {
                    "added": {"type": "array", "items": {"type": "string"}}, "removed": {"type": "array", "items": {"type": "string"}},
                    "unchanged": {"type": "array", "items": {"type": "string"}},
                    "changed": {"type": "array", "items": {"type": "object", "required": ["id", "fields"], "properties": {"id": {"type": "string"}, "fields": {"type": "array", "items": {"type": "string"}}}}}
                }
            });
            json!({
                "type": "object", "required": ["ok", "name", "a", "b", "nodes", "edges", "design"], "additionalProperties": false,
                "properties": {"ok": {"const": true}, "name": {"type": "string", "pattern": DesignName::PATTERN}, "a": {"type": "integer"}, "b": {"type": "integer"},
                               "nodes": changes, "edges": changes, "design": {"type": "array", "items": {"type": "string"}, "description": "Top-level fields that differ."}}
            })
        }
        Answer::Restored => json!({"anyOf": [
            {"type": "object", "required": ["ok", "name", "restored", "version", "path"], "additionalProperties": false,
             "properties": {"ok": {"const": true}, "name": {"type": "string", "pattern": DesignName::PATTERN}, "restored": {"type": "integer"},
                            "version": {"type": ["integer", "null"], "description": "The newest version, which has the restored content."}, "path": {"type": "string"}}},
            reference("Refusal"),
        ]}),
        Answer::Report => json!({
            "type": "object", "required": ["ok", "errors", "warnings"], "additionalProperties": false,
            "properties": {
                "ok": {"type": "boolean"}, "errors": {"type": "array", "items": reference("Issue")}, "warnings": {"type": "array", "items": reference("Issue")},
                "scopes": {
                    "description": "Only with scope=1: per node id, the node ids its templates and condition may name, and the loop whose body holds it.",
                    "type": "object",
                    "additionalProperties": {
                        "type": "object", "required": ["nodes", "loop"], "additionalProperties": false,
                        "properties": {"nodes": {"type": "array", "items": {"type": "string"}}, "loop": nullable_string()}
                    }
                }
            }
        }),
        Answer::RunStarted => json!({"anyOf": [reference("RunResult"), reference("Refusal")]}),
        Answer::Jobs => list("schedules", reference("Job")),
        Answer::Job => {
            json!({"type": "object", "required": ["ok", "job"], "additionalProperties": false, "properties": {"ok": {"const": true}, "job": reference("Job")}})
        }
        Answer::Preview => json!({"anyOf": [
            {"type": "object", "required": ["ok", "cron", "human", "tz", "next_run_at"], "additionalProperties": false,
             "properties": {"ok": {"const": true}, "cron": {"type": "string"}, "human": {"type": "string"}, "tz": {"type": "string"}, "next_run_at": nullable_time()}},
            {"type": "object", "required": ["ok", "error", "field"], "additionalProperties": false,
             "properties": {"ok": {"const": false}, "error": {"type": "string"}, "field": {"type": ["string", "null"]}}},
        ]}),
        Answer::ScheduleAction => json!({"anyOf": [
            {"type": "object", "required": ["ok", "job"], "additionalProperties": false, "properties": {"ok": {"const": true}, "job": reference("Job")}},
            {"type": "object", "required": ["ok", "job_id", "removed"], "additionalProperties": false,
             "properties": {"ok": {"const": true}, "job_id": {"type": "string"}, "removed": {"const": true}}},
            reference("RunResult"),
            reference("Refusal"),
        ]}),
        Answer::Runs => {
            let mut runs = list("runs", json!({"anyOf": [reference("RunResult"), reference("UnreadableRun")]}));
            runs["required"] = json!(["ok", "runs", "next"]);
            runs["properties"]["next"] = json!({
                "type": ["string", "null"], "pattern": RunId::PATTERN,
                "description": "Pass as before= for the next page; null when no older run matches."
            });
            runs["properties"]["stamp"] = with_only_when_following(stamp());
            runs
        }
        Answer::Run => reference("RunResult"),
        Answer::Emitted => json!({
            "type": "object", "required": ["ok", "event", "runs", "skipped"], "additionalProperties": false,
            "properties": {
                "ok": {"const": true},
                "event": {"type": "string", "pattern": EVENT_NAME_PATTERN},
                "runs": {"type": "array", "items": reference("RunResult")},
                "skipped": {"type": "array", "items": {"type": "object", "required": ["design", "reason"], "properties": {"design": {"type": "string"}, "reason": {"type": "string"}}}}
            }
        }),
        Answer::Schema => json!({
            "type": "object",
            "required": ["node_fields", "node_types", "trigger_modes", "schedule_presets", "design_fields", "http_methods", "limits"],
            "description": "The design model, read from the same constants as the validator (vwf schema prints it)."
        }),
        Answer::Imported => json!({
            "type": "object", "required": ["ok", "designs", "notes"], "additionalProperties": false,
            "properties": {
                "ok": {"type": "boolean", "description": "false when a workflow was refused (its design has errors)."},
                "designs": {"type": "array", "items": {
                    "type": "object", "required": ["name", "status"], "additionalProperties": false,
                    "properties": {
                        "name": {"type": "string"},
                        "status": {"enum": ["saved", "skipped", "refused"]},
                        "path": {"type": "string", "description": "saved: where."},
                        "enabled": {"type": "boolean", "description": "saved: false when the design has an automatic trigger, which stays off until it is enabled."},
                        "reason": {"type": "string", "description": "skipped: why."},
                        "error": {"type": "string", "description": "refused: why."},
                        "errors": {"description": "refused: the design's errors (null when the save itself failed).", "anyOf": [{"type": "null"}, {"type": "array", "items": reference("Issue")}]}
                    }
                }},
                "notes": {"type": "array", "items": {"type": "string"}, "description": "What could not be mapped, one line each."}
            }
        }),
        Answer::OpenApi => json!({"type": "object", "required": ["openapi", "info", "paths"]}),
        Answer::Metrics => json!({"type": "string"}),
    }
}

/// The `stamp` of a long-poll answer, and the `since` that gives it back.
fn stamp() -> Value {
    json!({"type": "string", "pattern": STAMP_PATTERN})
}

fn with_only_when_following(mut schema: Value) -> Value {
    schema["description"] = json!("Only with since= or wait= (GET /runs, GET /runs/{run_id}): pass it as since= to wait for a change.");
    schema
}

fn time() -> Value {
    json!({"type": "string", "format": "date-time"})
}

fn nullable_time() -> Value {
    json!({"type": ["string", "null"], "format": "date-time"})
}

fn nullable_string() -> Value {
    json!({"type": ["string", "null"]})
}

/// Shared shapes: the run result of SPEC §8 and its parts, jobs, issues, errors, and the
/// structured request bodies.
fn schemas() -> Value {
    let step_status = ["running", "retrying", "done", "failed", "awaiting_approval", "awaiting_agent", "waiting"];
    json!({
        "Error": {
            "type": "object", "required": ["ok", "error"], "additionalProperties": false,
            "properties": {"ok": {"const": false}, "error": {"type": "string"}}
        },
        "Issue": {
            "type": "object", "required": ["message"],
            "properties": {"node": {"type": "string"}, "edge": {"type": "integer", "minimum": 0}, "field": {"type": "string"}, "message": {"type": "string"}}
        },
        "Refusal": {
            "description": "A design that cannot run or be saved, with its problems.",
            "type": "object", "required": ["ok", "error", "errors"], "additionalProperties": false,
            "properties": {"ok": {"const": false}, "error": {"type": "string"}, "errors": {"type": "array", "items": reference("Issue")}}
        },
        "Pending": {
            "oneOf": [
                {"type": "object", "required": ["type", "node", "question", "options", "deadline", "on_timeout"],
                 "properties": {"type": {"const": "approval"}, "node": {"type": "string"}, "question": {"type": "string"},
                                "options": {"type": "array", "items": {"type": "string"}}, "deadline": nullable_time(), "on_timeout": {"type": "string"},
                                "outputs": {"type": "object", "description": "The texts of the steps (and of the input, trigger) the question names, by id.",
                                            "additionalProperties": {"type": "string"}}}},
                {"type": "object", "required": ["type", "node", "prompt", "profile", "model"],
                 "properties": {"type": {"const": "agent"}, "node": {"type": "string"}, "prompt": {"type": "string"},
                                "profile": nullable_string(), "model": nullable_string()}},
                {"type": "object", "required": ["type", "node", "resume_at"],
                 "properties": {"type": {"const": "wait"}, "node": {"type": "string"}, "resume_at": time()}}
            ]
        },
        "Step": {
            "type": "object", "required": ["node", "status", "attempts", "started_at", "finished_at", "error"],
            "properties": {
                "node": {"type": "string"}, "status": {"enum": step_status}, "attempts": {"type": "integer", "minimum": 0},
                "started_at": time(), "finished_at": nullable_time(), "error": nullable_string(),
                "failures": {"type": "array", "items": {"type": "string"}},
                "tries": {"type": "array", "items": {
                    "type": "object", "required": ["attempt", "status", "started_at", "finished_at", "error", "output_bytes"],
                    "properties": {
                        "attempt": {"type": "integer", "minimum": 1}, "status": {"enum": step_status},
                        "started_at": time(), "finished_at": nullable_time(), "error": nullable_string(),
                        "output_bytes": {"type": ["integer", "null"], "minimum": 0}
                    }
                }},
                "pinned": {"type": "boolean", "description": "Present (true) when a test run settled the step with its pinned output: nothing ran."},
                "inputs": {
                    "description": "What the latest attempt received, rendered; values of env entries and of credential headers, URL user info and secret query parameters are \"***\". Absent for steps the engine settles alone (condition, approval, wait, loop).",
                    "oneOf": [
                        {"type": "object", "description": "command", "required": ["cwd", "env"], "properties": {
                            "run": {"type": "string", "description": "The script as sh runs it: template values are read from the VWF_VALUE_<n> variables in values."},
                            "argv": {"type": "array", "items": {"type": "string"}},
                            "cwd": nullable_string(), "env": {"type": "object", "additionalProperties": {"const": "***"}},
                            "values": {"type": "object", "additionalProperties": {"type": "string"}}}},
                        {"type": "object", "description": "http", "required": ["method", "url", "headers", "body"], "properties": {
                            "method": {"type": "string"}, "url": {"type": "string"}, "headers": {"type": "object", "additionalProperties": {"type": "string"}}, "body": {}}},
                        {"type": "object", "description": "agent", "required": ["prompt", "profile", "model"], "properties": {
                            "prompt": {"type": "string"}, "profile": nullable_string(), "model": nullable_string()}},
                        {"type": "object", "description": "output with deliver", "required": ["deliver", "target", "text"], "properties": {
                            "deliver": {"enum": ["notification", "channel"]}, "target": {"type": "string"}, "text": {"type": "string"}}},
                        {"type": "object", "description": "emit", "required": ["event", "payload"], "properties": {"event": {"type": "string"}, "payload": {}}}
                    ]
                }
            }
        },
        "Delivery": {
            "type": "object", "required": ["node", "target", "ok", "detail", "at"],
            "properties": {"node": {"type": "string"}, "target": {"type": "string"}, "ok": {"type": "boolean"}, "detail": {"type": "string"}, "at": time()}
        },
        "RunResult": {
            "description": "The run result (SPEC §8).",
            "type": "object",
            "required": ["ok", "run_id", "design", "version", "status", "pending", "outputs", "skipped", "deliveries", "error", "failed_node", "steps", "trigger", "test", "created_at", "updated_at"],
            "properties": {
                "ok": {"type": "boolean"},
                "run_id": {"type": "string", "pattern": RunId::PATTERN},
                "design": {"type": "string", "pattern": DesignName::PATTERN},
                "version": {"type": ["integer", "null"], "description": "The design version the run ran; null for a run from before versions."},
                "status": {"enum": ["running", "waiting", "awaiting_approval", "awaiting_agent", "done", "failed"]},
                "pending": {"anyOf": [{"type": "null"}, reference("Pending")]},
                "outputs": {"type": "object"},
                "skipped": {"type": "array", "items": {"type": "string"}},
                "deliveries": {"type": "array", "items": reference("Delivery")},
                "error": nullable_string(),
                "failed_node": nullable_string(),
                "steps": {"type": "array", "items": reference("Step")},
                "trigger": {"type": "object", "required": ["mode", "input"], "properties": {"mode": {"type": "string"}, "input": {}, "depth": {"type": "integer", "minimum": 0}}},
                "retry_of": {"type": "string", "pattern": RunId::PATTERN, "description": "Present on a retry from the start: the run it retries."},
                "test": {"type": "boolean", "description": "A test run: pinned steps gave their pins, and it may have run only part of the design."},
                "created_at": time(),
                "updated_at": time(),
                "plan": {"type": "object", "description": "Only with plan=1: the plan the run started with."},
                "stamp": with_only_when_following(stamp())
            }
        },
        "UnreadableRun": {
            "description": "A run file in the listing that cannot be read as a run.",
            "type": "object", "required": ["ok", "run_id", "error"], "additionalProperties": false,
            "properties": {"ok": {"const": false}, "run_id": {"type": "string"}, "error": {"type": "string"}}
        },
        "Job": {
            "type": "object",
            "required": ["job_id", "name", "design", "cron", "human", "tz", "paused", "next_run_at", "last_run_at", "prompt", "deliver"],
            "properties": {
                "job_id": {"type": "string"}, "name": {"type": "string"}, "design": {"type": "string", "pattern": DesignName::PATTERN},
                "cron": {"type": "string"}, "human": {"type": "string"}, "tz": {"type": "string"}, "paused": {"type": "boolean"},
                "next_run_at": nullable_time(), "last_run_at": nullable_time(), "prompt": {"type": "string"},
                "deliver": nullable_string(),
                "schedule": {"type": "object"},
                "paused_reason": {"type": "string", "description": "Why the job was paused when no person paused it (its design was deleted)."},
                "input": {"description": "The input of every run the job starts; absent when it has none."},
                "missed": {"type": "array", "items": {"type": "object", "required": ["at"], "properties": {"at": time()}}}
            }
        },
        "Profile": {
            "type": "object", "required": ["name", "model"],
            "properties": {"name": {"type": "string"}, "model": nullable_string(), "system": {"type": "string"}, "backend": {"type": "string"}}
        },
        "Channel": {
            "type": "object", "required": ["platform", "target", "home"],
            "properties": {"platform": {"type": "string"}, "target": {"type": "string"}, "home": nullable_string()}
        },
        "Templates": {
            "type": "object", "required": ["ok", "templates"], "additionalProperties": false,
            "properties": {
                "ok": {"const": true},
                "templates": {"type": "array", "items": {
                    "type": "object", "required": ["name", "description", "graph"],
                    "properties": {"name": {"type": "string"}, "description": {"type": "string"}, "graph": {"type": "object"}}
                }}
            }
        },
        "ScheduleRequest": schedule_request(),
        "RespondRequest": {
            "description": "Exactly one of answer (a gate's option), output (an agent step's text) or agent_generate: true.",
            "type": "object", "required": ["node"],
            "properties": {
                "node": {"type": "string"},
                "answer": nullable_string(),
                "output": nullable_string(),
                "agent_generate": {"type": ["boolean", "null"]}
            },
            "oneOf": [
                {"required": ["answer"], "properties": {"answer": {"type": "string"}}},
                {"required": ["output"], "properties": {"output": {"type": "string"}}},
                {"required": ["agent_generate"], "properties": {"agent_generate": {"const": true}}}
            ]
        }
    })
}

/// The schedule object of SPEC §10 plus `paused`, one branch per preset. Fields a preset does not
/// use are still type-checked; `null` stands for a missing field.
fn schedule_request() -> Value {
    let time = json!({"type": "string", "pattern": r"^\s*([01]?[0-9]|2[0-3]):[0-5][0-9]\s*$"});
    let unused_string = nullable_string();
    let unused_number = json!({"type": ["integer", "null"], "minimum": 0, "maximum": u32::MAX});
    let mut tz: Vec<&str> = time_zone_names().collect();
    tz.sort_unstable();
    tz.dedup();
    let common = json!({
        "tz": {"anyOf": [{"type": "null"}, {"enum": tz}]},
        "paused": {"type": ["boolean", "null"]},
        "input": {"description": "The input of every run the job starts (null removes it; absent keeps it)."},
        "time": unused_string,
        "minute": unused_number,
        "dow": unused_number,
        "cron": unused_string,
    });
    let branch = |presets: Value, required: &[&str], own: Value| {
        let mut properties = common.clone();
        properties["preset"] = presets;
        for (k, v) in own.as_object().into_iter().flatten() {
            properties[k] = v.clone();
        }
        let mut required = required.to_vec();
        required.insert(0, "preset");
        json!({"type": "object", "required": required, "properties": properties})
    };
    json!({
        "description": "{preset, time?, minute?, dow?, cron?, tz?, paused?, input?}. The cron pattern covers numbers, * and */n \
                        lists (days of month up to 28); the server also takes ranges (a-b, a-b/n).",
        "oneOf": [
            branch(json!({"const": "hourly"}), &[], json!({"minute": {"type": ["integer", "null"], "minimum": 0, "maximum": 59}, "time": {"anyOf": [{"type": "null"}, time]}})),
            branch(json!({"enum": ["daily", "weekdays"]}), &["time"], json!({"time": time})),
            branch(json!({"const": "weekly"}), &["time"], json!({"time": time, "dow": {"type": ["integer", "null"], "minimum": 0, "maximum": 6}})),
            branch(json!({"const": "custom"}), &["cron"], json!({"cron": {"type": "string", "pattern": cron_pattern()}})),
        ]
    })
}

/// Five cron fields, each `*`, `*/n` or a comma list of numbers within the field's range: the
/// forms every expression of which can fire.
fn cron_pattern() -> String {
    // (numbers, steps) per field: minute, hour, day of month (to 28: every month has it), month,
    // day of week.
    let fields = [
        ("[0-9]|[1-5][0-9]", "[1-9]|[1-5][0-9]|60"),
        ("[0-9]|1[0-9]|2[0-3]", "[1-9]|1[0-9]|2[0-4]"),
        ("[1-9]|1[0-9]|2[0-8]", "[1-9]|[12][0-9]|3[01]"),
        ("[1-9]|1[0-2]", "[1-9]|1[0-2]"),
        ("[0-6]", "[1-7]"),
    ];
    let field = |(n, step): (&str, &str)| format!(r"(\*(/({step}))?|({n})(,({n}))*)");
    let parts: Vec<String> = fields.into_iter().map(field).collect();
    format!("^{}$", parts.join(" "))
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
        (409, "The run is not waiting on that node, or not retryable."),
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
