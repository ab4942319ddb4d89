//! Agent steps as a user meets them: performed by a real local OpenAI-compatible server (wiremock,
//! speaking the chat-completions wire format) or by a configured command, with retries, the token
//! budget, `agent_generate` on a parked step, the model catalog and its cache, and an API key that
//! is sent only when its variable is set and never written anywhere.

use crate::common;

use std::sync::Arc;

use common::Home;
use serde_json::{Value, json};
use vwf::config::Config;
use vwf::exec::agent;
use vwf::failure::Failure;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY_VAR: &str = "VWF_TEST_AGENT_KEY";
/// The run input every `draft` step needs.
const TOPIC: &str = r#"{"topic": "x"}"#;

/// A runtime owned by the test: the mock server lives on it while the CLI runs beside it.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime")
}

/// `vwf --json <args>` with `env` (name, value; `None` removes the variable), off the runtime's
/// workers so the server keeps answering.
async fn vwf_env(home: &Arc<Home>, env: &[(&str, Option<&str>)], args: &[&str]) -> (i32, Value) {
    let home = Arc::clone(home);
    let env: Vec<(String, Option<String>)> = env.iter().map(|(k, v)| (k.to_string(), v.map(String::from))).collect();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = home.vwf();
        cmd.env_remove(KEY_VAR);
        for (k, v) in &env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let out = cmd.arg("--json").args(&args).output().expect("run vwf");
        (common::code(&out), common::parse(&out))
    })
    .await
    .expect("vwf task")
}

async fn vwf(home: &Arc<Home>, args: &[&str]) -> (i32, Value) {
    vwf_env(home, &[], args).await
}

/// Points the home's config at the mock server, with `extra` TOML appended.
fn use_server(home: &Home, server: &MockServer, extra: &str) {
    let config = format!(
        "[agent]\nbackend = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"{KEY_VAR}\"\ndefault_model = \"base-model\"\n\n\
         [profiles.writer]\nmodel = \"writer-model\"\nsystem = \"You write short, factual briefs.\"\n\n{extra}",
        server.uri()
    );
    std::fs::write(Config::path(home.path()), config).expect("write config");
}

/// A chat-completions answer.
fn completion(text: &str, model: &str, total_tokens: u64) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": total_tokens / 3, "completion_tokens": total_tokens - total_tokens / 3, "total_tokens": total_tokens}
    }))
}

fn chat() -> wiremock::MockBuilder {
    Mock::given(method("POST")).and(path("/v1/chat/completions"))
}

/// A manual trigger feeding `nodes` in a chain; `extra` top-level fields are merged in.
fn chain(nodes: Vec<Value>, extra: Value) -> Value {
    let mut all = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    all.extend(nodes);
    let edges: Vec<Value> = all.windows(2).map(|w| json!({"from": w[0]["id"], "to": w[1]["id"]})).collect();
    let mut graph = json!({"nodes": all, "edges": edges});
    if let (Some(g), Some(e)) = (graph.as_object_mut(), extra.as_object()) {
        g.extend(e.clone());
    }
    graph
}

fn draft(extra: Value) -> Value {
    let mut node = json!({"id": "draft", "type": "agent", "prompt": "Summarise {{trigger.topic}}"});
    if let (Some(n), Some(e)) = (node.as_object_mut(), extra.as_object()) {
        n.extend(e.clone());
    }
    node
}

fn body_of(request: &Request) -> Value {
    serde_json::from_slice(&request.body).expect("request body is JSON")
}

fn step<'a>(run: &'a Value, node: &str) -> &'a Value {
    run["steps"].as_array().and_then(|s| s.iter().find(|s| s["node"] == node)).unwrap_or_else(|| panic!("no step {node} in {run}"))
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.expect("request recording is on")
}

#[test]
fn an_agent_step_is_performed_by_an_openai_compatible_server() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        chat()
            .and(body_string_contains("Polish: Rust in brief"))
            .respond_with(completion("Final: Rust in brief.", "polish-model", 7))
            .with_priority(1)
            .mount(&server)
            .await;
        chat().respond_with(completion("Rust in brief", "writer-model", 12)).mount(&server).await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        let polish =
            json!({"id": "polish", "type": "agent", "prompt": "Polish: {{nodes.draft}}", "model": "polish-model", "max_tokens": 64});
        home.save("brief", &chain(vec![draft(json!({"profile": "writer"})), polish], json!({})));

        let (code, run) = vwf(&home, &["run", "brief", "--input", r#"{"topic": "rust"}"#]).await;
        assert_eq!(code, 0, "{run}");
        assert_eq!(run["status"], "done");
        assert_eq!(run["outputs"]["draft"]["text"], "Rust in brief");
        assert_eq!(run["outputs"]["draft"]["model"], "writer-model");
        assert_eq!(run["outputs"]["draft"]["tokens"], 12);
        assert_eq!(run["outputs"]["polish"]["text"], "Final: Rust in brief.");
        assert_eq!(run["outputs"]["polish"]["model"], "polish-model");
        assert_eq!(run["outputs"]["polish"]["tokens"], 7);
        let file = common::run_file(&home, run["run_id"].as_str().unwrap());
        assert_eq!(file["tokens_used"], 19);

        let seen = requests(&server).await;
        assert_eq!(seen.len(), 2);
        assert!(seen.iter().all(|r| !r.headers.contains_key("authorization")), "no key variable, no Authorization header");
        assert_eq!(
            body_of(&seen[0]),
            json!({"model": "writer-model", "messages": [
                {"role": "system", "content": "You write short, factual briefs."},
                {"role": "user", "content": "Summarise rust"}
            ]})
        );
        assert_eq!(
            body_of(&seen[1]),
            json!({"model": "polish-model", "messages": [{"role": "user", "content": "Polish: Rust in brief"}], "max_tokens": 64})
        );
    });
}

/// Hermes's API server as the backend: its answers have the OpenAI shape with Hermes's own
/// additions (the wire format of `gateway/platforms/api_server.py` in hermes-agent 0.19: `usage`
/// with prompt and completion tokens and no cached count, and `hermes` when the agent stopped
/// short). Its usage is recorded like any backend's; an answer it marks failed or partial is not
/// taken as the step's text.
#[test]
fn hermes_api_server_answers_give_usage_and_a_stopped_agent_fails_the_step() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        let hermes = |content: &str, stopped: Option<Value>| {
            let mut body = json!({
                "id": "chatcmpl-hermes", "object": "chat.completion", "created": 1764547200, "model": "hermes-agent",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}
            });
            if let Some(h) = stopped {
                body["hermes"] = h;
            }
            ResponseTemplate::new(200).set_body_json(body)
        };
        let failed =
            json!({"completed": false, "partial": true, "failed": false, "error": "max iterations reached", "error_code": "agent_error"});
        chat().and(body_string_contains("broken")).respond_with(hermes("half an ans", Some(failed))).with_priority(1).mount(&server).await;
        chat().respond_with(hermes("A brief from Hermes.", None)).mount(&server).await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        home.save("brief", &chain(vec![draft(json!({}))], json!({})));
        let (code, run) = vwf(&home, &["run", "brief", "--input", TOPIC]).await;
        assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
        assert_eq!(run["outputs"]["draft"]["text"], "A brief from Hermes.");
        assert_eq!(
            run["outputs"]["draft"]["usage"],
            json!({"input_tokens": 321, "output_tokens": 45, "cached_tokens": 0, "model": "hermes-agent"})
        );
        assert_eq!(run["usage"]["input_tokens"], 321);

        home.save("broken", &chain(vec![json!({"id": "draft", "type": "agent", "prompt": "broken {{trigger.topic}}"})], json!({})));
        let (_, run) = vwf(&home, &["run", "broken", "--input", TOPIC]).await;
        assert_eq!(run["status"], "failed", "{run}");
        let error = run["error"].as_str().unwrap_or_default();
        assert!(error.contains("stopped short (agent_error): max iterations reached"), "{error}");
        assert!(run["outputs"].get("draft").is_none(), "a partial text is never the step's output: {run}");
    });
}

#[test]
fn the_api_key_is_sent_only_when_its_variable_is_set_and_never_recorded() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        home.save("keyed", &chain(vec![draft(json!({}))], json!({})));
        let secret = "sk-test-0123456789";

        chat().respond_with(completion("fine", "base-model", 3)).mount(&server).await;
        for env in [None, Some("")] {
            let (code, run) = vwf_env(&home, &[(KEY_VAR, env)], &["run", "keyed", "--input", TOPIC]).await;
            assert_eq!(code, 0, "{run}");
        }
        let (code, run) = vwf_env(&home, &[(KEY_VAR, Some(secret))], &["run", "keyed", "--input", TOPIC]).await;
        assert_eq!(code, 0, "{run}");
        let seen = requests(&server).await;
        assert_eq!(seen.len(), 3);
        assert!(!seen[0].headers.contains_key("authorization"), "unset variable: no header");
        assert!(!seen[1].headers.contains_key("authorization"), "empty variable: no header");
        assert_eq!(seen[2].headers.get("authorization").and_then(|v| v.to_str().ok()), Some(format!("Bearer {secret}").as_str()));

        // A server that echoes the key in its refusal: the error names the status, not the key.
        server.reset().await;
        chat()
            .respond_with(
                ResponseTemplate::new(401).set_body_json(json!({"error": {"message": format!("Incorrect API key provided: {secret}")}})),
            )
            .mount(&server)
            .await;
        let (code, run) = vwf_env(&home, &[(KEY_VAR, Some(secret))], &["run", "keyed", "--input", TOPIC]).await;
        assert_eq!(code, 1, "{run}");
        let error = run["error"].as_str().unwrap_or_default();
        assert!(error.contains("HTTP 401") && error.contains("Incorrect API key"), "{error}");
        for entry in home.files() {
            let bytes = std::fs::read(home.path().join(&entry)).unwrap_or_default();
            assert!(!String::from_utf8_lossy(&bytes).contains(secret), "{} holds the key", entry.display());
        }
    });
}

#[test]
fn token_usage_counts_against_the_budget() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        chat().respond_with(completion("a long answer", "base-model", 150)).mount(&server).await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        let after = json!({"id": "after", "type": "command", "run": "echo never"});
        home.save("thrifty", &chain(vec![draft(json!({})), after], json!({"budget": {"tokens": 100}})));

        let (code, run) = vwf(&home, &["run", "thrifty", "--input", TOPIC]).await;
        assert_eq!(code, 1, "{run}");
        assert_eq!(run["status"], "failed");
        assert_eq!(run["error"], "token budget exceeded");
        assert_eq!(run["failed_node"], "draft");
        assert!(run["outputs"].get("after").is_none(), "nothing runs after the budget is exceeded: {run}");
    });
}

#[test]
fn a_failing_backend_is_retried_then_fails_the_run() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        chat().respond_with(ResponseTemplate::new(500).set_body_string("upstream exploded")).expect(2).mount(&server).await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        home.save("flaky", &chain(vec![draft(json!({"retries": 1}))], json!({})));

        let (code, run) = vwf(&home, &["run", "flaky", "--input", TOPIC]).await;
        assert_eq!(code, 1, "{run}");
        assert_eq!(run["status"], "failed");
        assert_eq!(run["failed_node"], "draft");
        let error = run["error"].as_str().unwrap_or_default();
        assert!(error.contains("HTTP 500") && error.contains("upstream exploded"), "{error}");
        let draft = step(&run, "draft");
        assert_eq!(draft["attempts"], 2, "{run}");
        let failures = draft["failures"].as_array().unwrap_or_else(|| panic!("no failures recorded: {run}"));
        assert_eq!(failures.len(), 1);
        assert!(failures[0].as_str().unwrap_or_default().contains("HTTP 500"), "{run}");
        assert_eq!(requests(&server).await.len(), 2);
    });
}

#[test]
fn a_failure_then_success_with_retries() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        chat().respond_with(ResponseTemplate::new(500).set_body_string("busy")).up_to_n_times(1).with_priority(1).mount(&server).await;
        chat().respond_with(completion("second time lucky", "base-model", 5)).mount(&server).await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        home.save("flaky", &chain(vec![draft(json!({"retries": 2}))], json!({})));

        let (code, run) = vwf(&home, &["run", "flaky", "--input", TOPIC]).await;
        assert_eq!(code, 0, "{run}");
        assert_eq!(run["status"], "done");
        assert_eq!(run["outputs"]["draft"]["text"], "second time lucky");
        assert_eq!(run["outputs"]["draft"]["model"], "base-model");
        let draft = step(&run, "draft");
        assert_eq!(draft["attempts"], 2, "{run}");
        assert_eq!(draft["failures"].as_array().map(Vec::len), Some(1), "{run}");
        assert_eq!(requests(&server).await.len(), 2);
    });
}

#[test]
fn malformed_answers_fail_with_a_clear_error() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        home.save("odd", &chain(vec![draft(json!({}))], json!({})));
        for (answer, expected) in [
            (ResponseTemplate::new(200).set_body_string("<html>gateway</html>"), "not JSON"),
            (ResponseTemplate::new(200).set_body_json(json!({"choices": []})), "no choices[0].message.content"),
        ] {
            server.reset().await;
            chat().respond_with(answer).mount(&server).await;
            let (code, run) = vwf(&home, &["run", "odd", "--input", TOPIC]).await;
            assert_eq!(code, 1, "{run}");
            assert!(run["error"].as_str().unwrap_or_default().contains(expected), "{run}");
        }

        // A step whose model nothing names, and a profile nobody configured.
        std::fs::write(Config::path(home.path()), format!("[agent]\nbackend = \"openai\"\nbase_url = \"{}/v1\"\n", server.uri())).unwrap();
        let (code, run) = vwf(&home, &["run", "odd", "--input", TOPIC]).await;
        assert_eq!(code, 1, "{run}");
        assert!(run["error"].as_str().unwrap_or_default().contains("no model"), "{run}");
        home.save("ghost", &chain(vec![draft(json!({"profile": "ghost", "model": "m"}))], json!({})));
        let (code, run) = vwf(&home, &["run", "ghost", "--input", TOPIC]).await;
        assert_eq!(code, 1, "{run}");
        assert!(run["error"].as_str().unwrap_or_default().contains("unknown profile \"ghost\""), "{run}");
    });
}

#[test]
fn agent_generate_performs_a_parked_step() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        let home = Arc::new(Home::new());
        let then = json!({"id": "shout", "type": "command", "run": "printf '%s!' {{nodes.draft}}"});
        home.save("parked", &chain(vec![draft(json!({"profile": "writer"})), then], json!({})));

        // No backend yet: the step parks with its rendered prompt.
        let (code, run) = vwf(&home, &["run", "parked", "--input", r#"{"topic": "tea"}"#]).await;
        assert_eq!(code, 6, "{run}");
        assert_eq!(run["status"], "awaiting_agent");
        assert_eq!(run["pending"]["type"], "agent");
        assert_eq!(run["pending"]["prompt"], "Summarise tea");
        let id = run["run_id"].as_str().unwrap().to_string();

        // A failing backend leaves the run parked.
        use_server(&home, &server, "");
        chat().respond_with(ResponseTemplate::new(500).set_body_string("model not loaded")).mount(&server).await;
        let (code, body) = vwf(&home, &["respond", &id, "draft", "--generate"]).await;
        assert_eq!(code, 7, "{body}");
        assert_eq!(body["ok"], false);
        assert!(body["error"].as_str().unwrap_or_default().contains("HTTP 500"), "{body}");
        let (_, shown) = vwf(&home, &["show", &id]).await;
        assert_eq!(shown["status"], "awaiting_agent", "{shown}");

        // A working backend performs it and the run goes on.
        server.reset().await;
        chat().respond_with(completion("Tea is brewed leaves", "writer-model", 9)).mount(&server).await;
        let (code, run) = vwf(&home, &["respond", &id, "draft", "--generate"]).await;
        assert_eq!(code, 0, "{run}");
        assert_eq!(run["status"], "done");
        assert_eq!(run["outputs"]["draft"]["text"], "Tea is brewed leaves");
        assert_eq!(run["outputs"]["draft"]["model"], "writer-model");
        assert_eq!(run["outputs"]["draft"]["tokens"], 9);
        assert_eq!(run["outputs"]["shout"]["text"], "Tea is brewed leaves!");
        let seen = requests(&server).await;
        assert_eq!(seen.len(), 1);
        assert_eq!(body_of(&seen[0])["messages"][0]["content"], "You write short, factual briefs.");
        assert_eq!(body_of(&seen[0])["messages"][1]["content"], "Summarise tea");
    });
}

#[test]
fn no_backend_means_awaiting_agent_and_generate_is_503() {
    let home = Home::new();
    home.save("manual", &chain(vec![draft(json!({"profile": "writer"}))], json!({})));
    let (code, run) = home.json(&["run", "manual", "--input", r#"{"topic": "bees"}"#]);
    assert_eq!(code, 6, "{run}");
    assert_eq!(run["status"], "awaiting_agent");
    assert_eq!(run["pending"], json!({"node": "draft", "type": "agent", "prompt": "Summarise bees", "profile": "writer", "model": null}));
    let id = run["run_id"].as_str().unwrap();

    let args = json!({"run_id": id, "node": "draft", "agent_generate": true}).to_string();
    let (code, body) = home.json(&["tool", "workflow_design_respond", &args]);
    assert_eq!(code, 7, "{body}");
    assert_eq!(body["ok"], false);
    assert!(body["error"].as_str().unwrap_or_default().contains("no agent backend is configured"), "{body}");

    // Still parked: a pasted answer finishes it.
    let args = json!({"run_id": id, "node": "draft", "output": "Bees make honey."}).to_string();
    let (code, run) = home.json(&["tool", "workflow_design_respond", &args]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["status"], "done");
    assert_eq!(run["outputs"]["draft"]["text"], "Bees make honey.");
}

#[test]
fn the_command_backend_gets_the_prompt_on_stdin() {
    let home = Home::new();
    std::fs::write(Config::path(home.path()), "[agent]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"tr a-z A-Z\"]\n").unwrap();
    home.save("loud", &chain(vec![draft(json!({}))], json!({})));
    let (code, run) = home.json(&["run", "loud", "--input", r#"{"topic": "quiet words"}"#]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["outputs"]["draft"]["text"], "SUMMARISE QUIET WORDS");
    assert_eq!(run["outputs"]["draft"]["model"], Value::Null);
    assert_eq!(run["outputs"]["draft"]["tokens"], 0);

    // The step's model and system prompt reach the command; one trailing newline is dropped.
    std::fs::write(
        Config::path(home.path()),
        "[agent]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"printf '%s|%s|' \\\"$VWF_AGENT_MODEL\\\" \\\"$VWF_AGENT_SYSTEM\\\"; cat; echo\"]\n\
         [profiles.writer]\nmodel = \"local-7b\"\nsystem = \"Be brief.\"\n",
    )
    .unwrap();
    home.save("local", &chain(vec![draft(json!({"profile": "writer"}))], json!({})));
    let (code, run) = home.json(&["run", "local", "--input", r#"{"topic": "owls"}"#]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["outputs"]["draft"]["text"], "local-7b|Be brief.|Summarise owls");
    assert_eq!(run["outputs"]["draft"]["model"], "local-7b");

    // A failing command fails the step with its exit code and the tail of its stderr.
    std::fs::write(
        Config::path(home.path()),
        "[agent]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"echo model crashed >&2; exit 3\"]\n",
    )
    .unwrap();
    let (code, run) = home.json(&["run", "loud", "--input", TOPIC]);
    assert_eq!(code, 1, "{run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(error.contains("exited with code 3") && error.contains("model crashed"), "{error}");
}

#[test]
fn a_command_backend_that_overruns_its_timeout_is_killed() {
    let home = Home::new();
    std::fs::write(Config::path(home.path()), "[agent]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"sleep 30\"]\n").unwrap();
    home.save("slow", &chain(vec![draft(json!({"timeout_seconds": 1}))], json!({})));
    let started = std::time::Instant::now();
    let (code, run) = home.json(&["run", "slow", "--input", TOPIC]);
    assert_eq!(code, 1, "{run}");
    assert!(run["error"].as_str().unwrap_or_default().contains("timed out after 1 s"), "{run}");
    // Not a timing assertion on speed: only that the 30 s sleep was not waited for.
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
}

/// Library level: the catalog is fetched once per process and base URL until a refresh.
#[test]
fn models_are_cached_until_refreshed() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/v1/models"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"object": "list", "data": [{"id": "llama3.2", "object": "model"}, {"id": "qwen2.5"}]})),
            )
            .expect(2)
            .mount(&server)
            .await;
        let home = Home::new();
        use_server(&home, &server, "");
        let config = Config::load(home.path()).expect("config");
        let catalog = |refresh: bool| {
            let config = config.clone();
            async move { tokio::task::spawn_blocking(move || agent::models(&config, refresh)).await.expect("models task") }
        };

        assert_eq!(catalog(false).await, Ok(vec!["llama3.2".to_string(), "qwen2.5".to_string()]));
        assert_eq!(catalog(false).await, Ok(vec!["llama3.2".to_string(), "qwen2.5".to_string()]));
        assert_eq!(requests(&server).await.len(), 1, "the second call is answered from the cache");
        assert!(catalog(true).await.is_ok());
        assert_eq!(requests(&server).await.len(), 2, "refresh asks the server again");

        // A failing catalog is a 502; no backend at all is a 503.
        let broken = MockServer::start().await;
        Mock::given(method("GET")).and(path("/v1/models")).respond_with(ResponseTemplate::new(500)).mount(&broken).await;
        let home = Home::new();
        use_server(&home, &broken, "");
        let config = Config::load(home.path()).expect("config");
        let failure = tokio::task::spawn_blocking(move || agent::models(&config, true)).await.expect("models task").unwrap_err();
        assert_eq!(Failure::from(failure.clone()).status(), 502, "{failure}");
        let none = Failure::from(agent::models(&Config::default(), false).unwrap_err());
        assert!(matches!(none, Failure::Unavailable(_)), "{none}");
        assert_eq!(none.status(), 503);

        let profiles = agent::profiles(&Config::load(home.path()).expect("config"));
        assert_eq!(profiles, vec![json!({"name": "writer", "model": "writer-model", "system": "You write short, factual briefs."})]);
    });
}

/// An agent step offering a saved design as a tool: the model (the local server, in the real
/// chat-completions wire format) asks for a tool call, vwf runs the design once as a child run of
/// the step's run, gives the model its result as a `tool` message, and the model's next answer
/// is the step's output.
#[test]
fn an_agent_step_calls_a_design_as_a_tool_and_gives_the_model_its_result() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        // The second round carries the tool's result: the model answers.
        chat()
            .and(body_string_contains(r#""role":"tool""#))
            .respond_with(completion("Ada has been greeted.", "base-model", 5))
            .with_priority(1)
            .mount(&server)
            .await;
        chat()
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-2",
                "object": "chat.completion",
                "model": "base-model",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "greet", "arguments": "{\"name\":\"ada\"}"}}]}}],
                "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
            })))
            .mount(&server)
            .await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, "");
        let greet = json!({
            "description": "Greets a person by name.",
            "inputs": {"type": "object", "properties": {"name": {"type": "string", "description": "who"}}, "required": ["name"]},
            "nodes": [{"id": "t", "type": "trigger", "mode": "manual"}, {"id": "hello", "type": "command", "run": "echo hello {{trigger.name}}"}],
            "edges": [{"from": "t", "to": "hello"}],
        });
        home.save("greet", &greet);
        home.save("assistant", &chain(vec![json!({"id": "ask", "type": "agent", "prompt": "Greet Ada.", "tools": ["greet"]})], json!({})));

        let (code, run) = vwf(&home, &["run", "assistant"]).await;
        assert_eq!(code, 0, "{run}");
        assert_eq!(run["outputs"]["ask"]["text"], "Ada has been greeted.");
        assert_eq!(run["outputs"]["ask"]["tokens"], 11, "both rounds' tokens");
        let children = run["child_runs"].as_array().expect("child_runs");
        assert_eq!(children.len(), 1, "the design ran once: {run}");
        assert_eq!(run["outputs"]["ask"]["tool_calls"], json!([{"name": "greet", "run_id": children[0], "status": "done"}]));
        let (_, child) = vwf(&home, &["show", children[0].as_str().expect("id")]).await;
        assert_eq!((child["status"].as_str(), child["parent_run"].as_str()), (Some("done"), run["run_id"].as_str()), "{child}");
        assert_eq!(child["trigger"]["input"], json!({"name": "ada"}));

        let seen = requests(&server).await;
        assert_eq!(seen.len(), 2, "two rounds");
        let first = body_of(&seen[0]);
        assert_eq!(
            first["tools"],
            json!([{"type": "function", "function": {"name": "greet", "description": "Greets a person by name. (runs the saved design greet)",
                "parameters": greet["inputs"]}}])
        );
        let second = body_of(&seen[1]);
        let messages = second["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 3, "{second}");
        assert_eq!(messages[0], json!({"role": "user", "content": "Greet Ada."}));
        assert_eq!(messages[1]["tool_calls"][0]["id"], "call_1", "the assistant's tool call, as the model sent it");
        assert_eq!((messages[2]["role"].as_str(), messages[2]["tool_call_id"].as_str()), (Some("tool"), Some("call_1")));
        let result: Value = serde_json::from_str(messages[2]["content"].as_str().expect("text content")).expect("JSON result");
        assert_eq!((result["status"].as_str(), result["text"].as_str()), (Some("done"), Some("hello ada")), "{result}");
        assert_eq!(result["run_id"], children[0]);
    });
}

/// A chat-completions answer from `model` with a full `usage` (cached input tokens included).
fn completion_used(text: &str, model: &str, prompt: u64, completion: u64, cached: u64) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}}
    }))
}

const PRICES: &str =
    "[prices]\ncurrency = \"USD\"\n\n[prices.\"writer-model\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\ncached_per_mtok = 0.5\n";

/// Usage from the backend's own answers and the cost the price table gives, per step and for the
/// run (templates read the run's so far); an unpriced model costs `null`; a money budget stops the
/// run with a clear error; on both stores.
fn usage_and_cost_add_up_and_a_money_budget_stops_the_run(backend: common::Backend) {
    // Made before the runtime: a PostgreSQL home makes its database on a runtime of its own.
    let home = Arc::new(Home::with_backend(backend));
    runtime().block_on(async {
        let server = MockServer::start().await;
        chat()
            .and(body_string_contains("mystery"))
            .respond_with(completion_used("?", "mystery", 10, 10, 0))
            .with_priority(1)
            .mount(&server)
            .await;
        // 1000 in (200 of them cached), 500 out: 800 × 1 + 200 × 0.5 + 500 × 2 = 1900 per million.
        chat().respond_with(completion_used("words", "writer-model", 1000, 500, 200)).mount(&server).await;
        use_server(&home, &server, PRICES);
        let polish = json!({"id": "polish", "type": "agent", "prompt": "Polish: {{nodes.draft}}", "profile": "writer"});
        let say = json!({"id": "say", "type": "output", "template": "{{run.cost}} {{run.currency}} for {{run.usage.input_tokens}} in"});
        home.save("priced", &chain(vec![draft(json!({"profile": "writer"})), polish.clone(), say], json!({})));

        let (code, run) = vwf(&home, &["run", "priced", "--input", TOPIC]).await;
        assert_eq!(code, 0, "{run}");
        assert_eq!(
            run["outputs"]["draft"]["usage"],
            json!({"input_tokens": 1000, "output_tokens": 500, "cached_tokens": 200, "model": "writer-model"}),
            "{run}"
        );
        assert_eq!((run["outputs"]["draft"]["cost"].as_f64(), run["outputs"]["draft"]["currency"].as_str()), (Some(0.0019), Some("USD")));
        assert_eq!(run["usage"], json!({"input_tokens": 2000, "output_tokens": 1000, "cached_tokens": 400}), "{run}");
        assert_eq!((run["cost"].as_f64(), run["currency"].as_str()), (Some(0.0038), Some("USD")), "{run}");
        assert_eq!(run["outputs"]["say"]["text"], "0.0038 USD for 2000 in", "{run}");
        // The listing answers the same totals.
        let (_, listed) = vwf(&home, &["runs", "--design", "priced"]).await;
        assert_eq!(listed["runs"][0]["cost"].as_f64(), Some(0.0038), "{listed}");

        // A model the table does not price costs null, and so does its run.
        home.save("unpriced", &chain(vec![draft(json!({"model": "mystery"}))], json!({})));
        let (code, run) = vwf(&home, &["run", "unpriced", "--input", TOPIC]).await;
        assert_eq!(code, 0, "{run}");
        assert_eq!((run["outputs"]["draft"]["cost"].clone(), run["cost"].clone()), (Value::Null, Value::Null), "{run}");
        assert_eq!(run["usage"]["input_tokens"], 10);

        // A money budget: the second step passes it, and the run fails there.
        home.save("thrifty", &chain(vec![draft(json!({"profile": "writer"})), polish], json!({"budget": {"cost": 0.003}})));
        let (code, run) = vwf(&home, &["run", "thrifty", "--input", TOPIC]).await;
        assert_eq!(code, 1, "{run}");
        assert_eq!((run["error"].as_str(), run["failed_node"].as_str()), (Some("cost budget exceeded"), Some("polish")), "{run}");
        // A budget in money cannot be kept with a model that has no price: it says so.
        home.save("blind", &chain(vec![draft(json!({"model": "mystery"}))], json!({"budget": {"cost": 1}})));
        let (code, run) = vwf(&home, &["run", "blind", "--input", TOPIC]).await;
        assert_eq!(code, 1, "{run}");
        assert!(run["error"].as_str().is_some_and(|e| e.contains("model \"mystery\" has no price")), "{run}");

        // A design step's child: its usage and cost add up in the parent's totals.
        let brief = json!({"id": "brief", "type": "design", "design": "priced", "input": {"topic": "{{trigger.topic}}"}});
        home.save("briefing", &chain(vec![brief], json!({})));
        let (code, run) = vwf(&home, &["run", "briefing", "--input", TOPIC]).await;
        assert_eq!(code, 0, "{run}");
        assert_eq!((run["cost"].as_f64(), run["usage"]["input_tokens"].as_u64()), (Some(0.0038), Some(2000)), "{run}");
        assert_eq!(run["outputs"]["brief"]["cost"].as_f64(), Some(0.0038), "{run}");

        // The stats count every run once: their totals equal a recount of the runs themselves
        // (each top-level run's totals hold its children's), by design too.
        let (code, stats) = vwf(&home, &["stats"]).await;
        assert_eq!(code, 0, "{stats}");
        let (_, listed) = vwf(&home, &["runs", "--limit", "1000"]).await;
        let runs = listed["runs"].as_array().cloned().unwrap_or_default();
        assert_eq!(stats["totals"]["runs"].as_u64(), Some(runs.len() as u64), "{stats}");
        let top: Vec<&Value> = runs.iter().filter(|r| r["parent_run"].is_null()).collect();
        let sum = |field: &str| top.iter().map(|r| r["usage"][field].as_u64().unwrap_or(0)).sum::<u64>();
        assert_eq!(stats["totals"]["usage"]["input_tokens"].as_u64(), Some(sum("input_tokens")), "{stats}");
        assert_eq!(stats["totals"]["usage"]["cached_tokens"].as_u64(), Some(sum("cached_tokens")), "{stats}");
        let cost: f64 = top.iter().filter_map(|r| r["cost"].as_f64()).sum();
        assert!((stats["totals"]["cost"].as_f64().unwrap_or(-1.0) - cost).abs() < 1e-9, "{cost} {stats}");
        let unpriced = runs.iter().filter(|r| r["cost"].is_null()).count() as u64;
        assert_eq!(stats["totals"]["unpriced_runs"].as_u64(), Some(unpriced), "{stats}");
        let failed = runs.iter().filter(|r| r["status"] == "failed").count() as u64;
        assert_eq!(stats["totals"]["by_status"]["failed"].as_u64(), Some(failed), "{stats}");
        assert_eq!(stats["currency"], "USD");
        assert_eq!(stats["costliest_steps"][0]["node"], "draft", "{stats}");
        let (_, of_priced) = vwf(&home, &["stats", "--design", "priced"]).await;
        assert_eq!(of_priced["totals"]["runs"], 2, "a run of its own and the briefing's child: {of_priced}");
        assert_eq!(of_priced["totals"]["cost"].as_f64(), Some(0.0076), "{of_priced}");
    });
}

crate::on_both_backends!(usage_and_cost_add_up_and_a_money_budget_stops_the_run);

/// The runs an agent step's tool calls start count in the caller's usage, cost and money budget
/// (`tool_usage`, `tool_cost` on the step), while the stats count each run once.
#[test]
fn tool_calls_runs_count_in_the_callers_totals_and_budget_once() {
    runtime().block_on(async {
        let server = MockServer::start().await;
        chat()
            .and(body_string_contains(r#""role":"tool""#))
            .respond_with(completion_used("Done.", "writer-model", 200, 20, 0))
            .with_priority(1)
            .mount(&server)
            .await;
        chat().and(body_string_contains("Child brief")).respond_with(completion_used("A child brief.", "writer-model", 1000, 500, 200)).with_priority(2).mount(&server).await;
        chat()
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-3", "object": "chat.completion", "model": "writer-model",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "brief", "arguments": "{\"name\":\"ada\"}"}}]}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
            })))
            .with_priority(3)
            .mount(&server)
            .await;
        let home = Arc::new(Home::new());
        use_server(&home, &server, PRICES);
        home.save("brief", &json!({
            "description": "Writes a brief about a person.",
            "inputs": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            "nodes": [{"id": "t", "type": "trigger", "mode": "manual"}, {"id": "s", "type": "agent", "prompt": "Child brief for {{trigger.name}}", "profile": "writer"}],
            "edges": [{"from": "t", "to": "s"}],
        }));
        let ask = json!({"id": "ask", "type": "agent", "prompt": "Brief Ada.", "profile": "writer", "tools": ["brief"]});
        home.save("assistant", &chain(vec![ask.clone()], json!({})));

        let (code, run) = vwf(&home, &["run", "assistant"]).await;
        assert_eq!(code, 0, "{run}");
        // Own: 300 in, 30 out = 360 per million; the child: 800 + 200 × 0.5 + 500 × 2 = 1900.
        assert_eq!(run["outputs"]["ask"]["usage"]["input_tokens"], 300, "{run}");
        assert_eq!(run["outputs"]["ask"]["tool_usage"], json!({"input_tokens": 1000, "output_tokens": 500, "cached_tokens": 200}));
        assert_eq!(run["outputs"]["ask"]["tool_cost"].as_f64(), Some(0.0019));
        assert_eq!(run["usage"], json!({"input_tokens": 1300, "output_tokens": 530, "cached_tokens": 200}), "{run}");
        assert_eq!(run["cost"].as_f64(), Some(0.00226), "{run}");

        let (_, stats) = vwf(&home, &["stats"]).await;
        assert_eq!(stats["totals"]["runs"], 2, "the caller and the tool's run: {stats}");
        assert_eq!(stats["totals"]["usage"]["input_tokens"], 1300, "each run once: {stats}");
        assert_eq!(stats["totals"]["cost"].as_f64(), Some(0.00226), "{stats}");

        // A money budget counts what the tool's run cost: 0.00226 is over 0.001.
        home.save("frugal", &chain(vec![ask], json!({"budget": {"cost": 0.001}})));
        let (_, run) = vwf(&home, &["run", "frugal"]).await;
        assert_eq!((run["status"].as_str(), run["error"].as_str()), (Some("failed"), Some("cost budget exceeded")), "{run}");
    });
}
