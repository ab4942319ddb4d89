//! Every number of the contract's limits table (SPEC §18) and the per-type ranges of §3, in one place.
//! The validator, the engine and the drivers read these; nothing else spells a limit.

/// Nodes per design, notes included.
pub const MAX_NODES: usize = 50;
/// Length of a node id or a design name.
pub const MAX_ID_LEN: usize = 64;
/// Agent retries (attempts = 1 + retries).
pub const AGENT_RETRIES: (u64, u64) = (0, 3);
/// Agent `max_tokens` per step.
pub const AGENT_MAX_TOKENS: (u64, u64) = (1, u32::MAX as u64);
/// A design's `budget.tokens`: at most the largest whole number a browser's JSON keeps exact
/// (2^53 - 1), so the canvas can load and save it unchanged.
pub const BUDGET_TOKENS: (u64, u64) = (1, (1 << 53) - 1);
/// Agent timeout in seconds and its default.
pub const AGENT_TIMEOUT_SECONDS: (u64, u64) = (1, 3600);
pub const AGENT_TIMEOUT_DEFAULT: u64 = 300;
/// Approval deadline in minutes (three days at most).
pub const APPROVAL_TIMEOUT_MINUTES: (u64, u64) = (1, 4320);
/// Command timeout in seconds and its default.
pub const COMMAND_TIMEOUT_SECONDS: (u64, u64) = (1, 3600);
pub const COMMAND_TIMEOUT_DEFAULT: u64 = 300;
/// HTTP timeout in seconds and its default.
pub const HTTP_TIMEOUT_SECONDS: (u64, u64) = (1, 300);
pub const HTTP_TIMEOUT_DEFAULT: u64 = 30;
/// How long an output's delivery may take, and an emit the starting of its runs.
pub const DELIVER_TIMEOUT_SECONDS: (u64, u64) = (1, 300);
pub const DELIVER_TIMEOUT_DEFAULT: u64 = 15;
pub const EMIT_TIMEOUT_SECONDS: (u64, u64) = (1, 3600);
pub const EMIT_TIMEOUT_DEFAULT: u64 = 300;
/// How long a `wait_event` step may wait for its event: one second to a year.
pub const EVENT_WAIT_SECONDS: (u64, u64) = (1, 366 * 86_400);
/// Loop item cap per pass list and its default; loop concurrency and its default.
pub const LOOP_MAX_ITEMS: (u64, u64) = (1, 10_000);
pub const LOOP_MAX_ITEMS_DEFAULT: u64 = 100;
pub const LOOP_CONCURRENCY: (u64, u64) = (1, 16);
pub const LOOP_CONCURRENCY_DEFAULT: u64 = 1;
/// Wait duration in seconds (one second to one hour).
pub const WAIT_SECONDS: (u64, u64) = (1, 3600);
/// Heartbeat interval in seconds (one minute to one day).
pub const HEARTBEAT_SECONDS: (u64, u64) = (60, 86_400);
/// Event trigger `cooldown_seconds` (up to one week) and its default.
pub const EVENT_COOLDOWN_SECONDS: (u64, u64) = (0, 7 * 86_400);
pub const EVENT_COOLDOWN_DEFAULT: u64 = 0;
/// Folder trigger `debounce_ms` (up to one minute) and its default; the default `pattern`.
pub const FOLDER_DEBOUNCE_MS: (u64, u64) = (0, 60_000);
pub const FOLDER_DEBOUNCE_DEFAULT_MS: u64 = 500;
pub const FOLDER_PATTERN_DEFAULT: &str = "*";
/// Watch trigger `restart_delay_seconds` (the backoff never exceeds the top either) and its default.
pub const WATCH_RESTART_DELAY_SECONDS: (u64, u64) = (1, 300);
pub const WATCH_RESTART_DELAY_DEFAULT_SECONDS: u64 = 5;
/// Watch trigger `dedupe_minutes` (up to one day) and its default.
pub const WATCH_DEDUPE_MINUTES: (u64, u64) = (0, 1440);
pub const WATCH_DEDUPE_DEFAULT_MINUTES: u64 = 10;
/// A node's canvas position `x`, `y`: any number within this distance of the origin.
pub const CANVAS_COORDINATE: f64 = 1_000_000.0;
/// Step output kept inline, in bytes.
pub const STEP_OUTPUT_BYTES: usize = 1024 * 1024;
/// One template value handed to a command through its environment, in bytes: Linux refuses an
/// environment entry over 128 KiB (MAX_ARG_STRLEN), name and `=` included.
pub const COMMAND_VALUE_BYTES: usize = 128 * 1024 - 64;
/// Request body accepted by the server and the tools, in bytes.
pub const REQUEST_BODY_BYTES: usize = 1024 * 1024;
/// JSON nesting accepted at every entry (bodies, inputs, payloads, arguments) and parsed from step
/// outputs; a scalar is depth 0, `[]` depth 1.
pub const JSON_DEPTH: usize = 64;
/// Depth of design-emits-event-starts-design chains before the chain is cut.
pub const EVENT_DEPTH: u32 = 8;
/// How many designs an agent step may offer its model as tools, and how many rounds of tool
/// calls it may take before the model must answer.
pub const AGENT_TOOLS: usize = 16;
pub const AGENT_TOOL_ROUNDS: usize = 8;
/// A design step's `version`: a recorded version's number.
pub const DESIGN_VERSION: (u64, u64) = (1, i64::MAX as u64);
/// How deep design steps may nest: a run of a design a design step started is one deeper than
/// its parent; a design step that would start a run deeper fails.
pub const DESIGN_DEPTH: u32 = 8;

/// `true` when `v` lies in the inclusive range.
pub fn within(v: u64, range: (u64, u64)) -> bool {
    v >= range.0 && v <= range.1
}

/// Runs a filtered listing page looks at, at most: a page whose filter matches few runs ends
/// there with a cursor to continue, so no page reads every run of a large store.
pub const RUNS_SCANNED_PER_PAGE: usize = 2000;

/// Seconds a long-poll read (`GET /runs/{run_id}?since=&wait=`, `GET /runs?since=&wait=`) may
/// hold a request; a longer `wait` is cut to this.
pub const LIVE_WAIT_SECONDS: u64 = 30;
/// Long-poll reads one server holds at once; a request beyond them answers at once, as if its
/// wait were over.
pub const LIVE_WAITERS: usize = 256;
/// `[server] runs_in_flight`: run-starting and run-advancing requests (run, respond, retry) one
/// server works on at once; the default is this many per core. Beyond them requests queue. Few:
/// a run's durable writes queue on the disk and on its run directory, and past about 16 runs in
/// flight on two cores the server did fewer runs per second, not more.
pub const RUNS_IN_FLIGHT: (u64, u64) = (1, 4096);
pub const RUNS_IN_FLIGHT_PER_CORE: u64 = 4;
/// `[server] run_queue`: such requests waiting for a slot at once; one more answers 503 at once.
pub const RUN_QUEUE: (u64, u64) = (0, 65_536);
pub const RUN_QUEUE_DEFAULT: u64 = 1024;
/// `[server] run_queue_wait_ms`: how long a queued request waits for a slot before it answers 503.
pub const RUN_QUEUE_WAIT_MS: (u64, u64) = (0, 60_000);
pub const RUN_QUEUE_WAIT_DEFAULT_MS: u64 = 5_000;
/// The `Retry-After` (seconds) of a request refused because every run slot stayed taken.
pub const BUSY_RETRY_AFTER_SECONDS: u64 = 1;
/// `[designs] keep_versions`: how many of a design's newest versions pruning keeps (default: all).
pub const KEEP_VERSIONS: (u64, u64) = (1, 1_000_000);
/// A webhook trigger's `tolerance_seconds`: how far a signed timestamp may be from now.
pub const WEBHOOK_TOLERANCE_SECONDS: (u64, u64) = (1, 3600);
pub const WEBHOOK_TOLERANCE_DEFAULT_SECONDS: u64 = 300;
/// `[runs] idempotency_hours`: how long an idempotency key answers its first request's result.
pub const IDEMPOTENCY_HOURS: (u64, u64) = (1, 24 * 30);
pub const IDEMPOTENCY_HOURS_DEFAULT: u64 = 24;
/// `[limits] runs_per_origin`: runs one origin (a `POST /events`, `vwf emit`, or a run that emits)
/// may start directly or transitively through emits; the start past it fails the emitting step.
/// At most the runs a store's recent listing covers ([`ORIGIN_SCAN`]), where the count is read.
pub const RUNS_PER_ORIGIN: (u64, u64) = (1, 1000);
pub const RUNS_PER_ORIGIN_DEFAULT: u64 = 100;
/// The newest runs looked at to count the runs of one origin (the window the daemon watches).
pub const ORIGIN_SCAN: usize = 1000;
/// `[limits] run_bytes`: the most one run record may hold, in bytes; a save that would pass it
/// fails the run instead (its record as last saved, with the error).
pub const RUN_BYTES: (u64, u64) = (64 * 1024, 1024 * 1024 * 1024);
pub const RUN_BYTES_DEFAULT: u64 = 16 * 1024 * 1024;
