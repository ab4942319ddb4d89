use super::*;
use crate::trigger::{EVENT_NAME_PATTERN, heartbeat_from_node, is_event_name, validate_trigger};
use chrono::TimeZone;
use proptest::prelude::*;
use serde_json::json;

fn sched(v: Value) -> Result<String, ScheduleError> {
    schedule_from_value(&v).and_then(|s| to_cron(&s))
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("test object expected"),
    }
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).single().expect("valid test date")
}

fn cron_err(expr: &str) -> String {
    let e = validate_cron(expr).expect_err(expr);
    assert_eq!(e.field.as_deref(), Some("cron"));
    e.message
}

fn fields(issues: &[ScheduleError]) -> Vec<&str> {
    issues.iter().map(|e| e.field.as_deref().unwrap_or("-")).collect()
}

#[test]
fn whole_numbers_may_be_written_with_a_fraction() {
    let six = schedule_from_value(&json!({"preset": "hourly", "minute": 6.0})).unwrap();
    assert_eq!(six.minute, Some(6));
    for bad in [json!(6.5), json!(-1.0), json!(5e12), json!("6")] {
        assert!(schedule_from_value(&json!({"preset": "hourly", "minute": bad})).is_err(), "{bad}");
    }
}

#[test]
fn every_time_zone_name_is_accepted() {
    let names: Vec<&str> = time_zone_names().collect();
    assert!(names.len() > 400 && names.contains(&"UTC") && names.contains(&"Z"));
    for name in names {
        assert!(validate_tz(name).is_ok(), "{name}");
    }
    assert!(validate_tz("Mars/Olympus").is_err());
}

#[test]
fn the_event_name_pattern_is_the_rule() {
    assert_eq!(EVENT_NAME_PATTERN, "^[A-Za-z0-9_.:-]+$");
    for ok in ["deploy.done", "a", "A-1_b:c"] {
        assert!(is_event_name(ok), "{ok}");
    }
    for bad in ["", "a b", "a/b", "é"] {
        assert!(!is_event_name(bad), "{bad}");
    }
}

// --- presets and human lines ---

#[test]
fn presets_become_cron_and_human_lines() {
    let cases = [
        (json!({"preset": "hourly", "minute": 15}), "15 * * * *", "Hourly at :15"),
        (json!({"preset": "hourly"}), "0 * * * *", "Hourly at :00"),
        (json!({"preset": "hourly", "time": "10:45"}), "45 * * * *", "Hourly at :45"),
        (json!({"preset": "daily", "time": "09:00"}), "0 9 * * *", "Daily at 09:00"),
        (json!({"preset": "weekdays", "time": "09:00"}), "0 9 * * 1-5", "Weekdays at 09:00"),
        (json!({"preset": "weekly", "time": "09:00"}), "0 9 * * 1", "Weekly on Monday at 09:00"),
        (json!({"preset": "weekly", "time": "18:30", "dow": 0}), "30 18 * * 0", "Weekly on Sunday at 18:30"),
        (json!({"preset": "custom", "cron": "  */5 * * * *  "}), "*/5 * * * *", "Every 5 minutes"),
        (json!({"preset": "custom", "cron": "0 9 * * 6"}), "0 9 * * 6", "Weekly on Saturday at 09:00"),
    ];
    for (schedule, cron, line) in cases {
        let got = sched(schedule.clone()).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        assert_eq!(got, cron, "{schedule}");
        assert_eq!(human(&got), line, "{schedule}");
    }
}

#[test]
fn human_never_guesses() {
    // What no line says exactly (uneven minute gaps across the hour, days of the month that
    // must also be a weekday, long lists) stays cron; so does anything invalid.
    for expr in ["*/7 9 * * *", "0 9 */2 * 1", "5,10,20 1,2,3 * * *", "bad", ""] {
        assert_eq!(human(expr), format!("Cron {}", expr.trim()).trim_end(), "{expr}");
    }
    assert_eq!(human("  0   9 * * *  "), "Daily at 09:00");
    assert_eq!(human("0 25 * * *"), "Cron 0 25 * * *");
}

#[test]
fn schedule_errors_name_their_field() {
    let cases = [
        (json!({"preset": "daily"}), "time"),
        (json!({"preset": "daily", "time": "9:0"}), "time"),
        (json!({"preset": "daily", "time": "009:00"}), "time"),
        (json!({"preset": "weekdays", "time": "24:00"}), "time"),
        (json!({"preset": "weekly", "time": "09:60"}), "time"),
        (json!({"preset": "weekly", "time": "09:00", "dow": 7}), "dow"),
        (json!({"preset": "hourly", "minute": 60}), "minute"),
        (json!({"preset": "hourly", "minute": -1}), "minute"),
        (json!({"preset": "hourly", "minute": "5"}), "minute"),
        (json!({"preset": "hourly", "time": "noon"}), "time"),
        (json!({"preset": "custom"}), "cron"),
        (json!({"preset": "custom", "cron": "   "}), "cron"),
        (json!({"preset": "custom", "cron": "* * * *"}), "cron"),
        (json!({"preset": "custom", "cron": 5}), "cron"),
        (json!({"preset": "monthly", "time": "09:00"}), "preset"),
        (json!({"time": "09:00"}), "preset"),
        (json!({"preset": 1}), "preset"),
        (json!({"preset": "daily", "time": 900}), "time"),
        (json!({"preset": "daily", "time": "09:00", "tz": "Paris"}), "tz"),
        (json!({"preset": "daily", "time": "09:00", "tz": 1}), "tz"),
    ];
    for (schedule, field) in cases {
        let e = sched(schedule.clone()).expect_err(&schedule.to_string());
        assert_eq!(e.field.as_deref(), Some(field), "{schedule}: {e}");
    }
    let e = schedule_from_value(&json!("daily")).expect_err("not an object");
    assert!(e.message.contains("must be an object"), "{e}");
    assert_eq!(
        sched(json!({"preset": "daily", "time": "9.00"})).expect_err("bad time").to_string(),
        "time \"9.00\" must be a 24-hour time HH:MM, e.g. \"09:00\""
    );
}

/// Every time of day is taken with a one- or two-digit hour, and both spellings mean the
/// same minute; nothing else of that shape is.
#[test]
fn schedule_time_takes_a_one_digit_hour() {
    for hour in 0..24u32 {
        for minute in 0..60u32 {
            let want = format!("{minute} {hour} * * *");
            for time in [format!("{hour}:{minute:02}"), format!("{hour:02}:{minute:02}"), format!(" {hour}:{minute:02} ")] {
                assert_eq!(sched(json!({"preset": "daily", "time": time})), Ok(want.clone()), "{time}");
            }
        }
    }
    for bad in ["24:00", "7:60", "7:5", "07:5", "123:00", ":30", "7:", "7", "+7:30", "7:3a", "٧:30"] {
        assert!(sched(json!({"preset": "daily", "time": bad})).is_err(), "{bad}");
    }
    assert_eq!(parse_window("8:00-18:00"), Ok((8 * 60, 18 * 60)));
}

#[test]
fn schedule_ignores_unknown_and_null_fields_and_round_trips() {
    let s = schedule_from_value(&json!({"preset": "daily", "time": "07:05", "minute": null, "colour": "red"})).expect("valid schedule");
    assert_eq!(s, Schedule { preset: "daily".into(), time: Some("07:05".into()), ..Schedule::default() });
    assert_eq!(serde_json::to_value(&s).expect("serialises"), json!({"preset": "daily", "time": "07:05"}));
    let back: Schedule = serde_json::from_value(json!({"preset": "daily", "time": "07:05", "x": 1})).expect("deserialises");
    assert_eq!(back, s);
    assert_eq!(to_cron(&s).expect("cron"), "5 7 * * *");
}

#[test]
fn time_zones_must_exist_in_the_iana_database() {
    for ok in ["UTC", "Z", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "America/Port-au-Prince"] {
        assert!(validate_tz(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "utc",
        "Paris",
        "Europe/",
        "/Paris",
        "Europe//Paris",
        "Europe/Pa ris",
        "1Europe/Paris",
        "Europe/Paris;rm",
        "Atlantis/Nowhere",
        "Europe/Parisx",
        "europe/paris",
    ] {
        assert_eq!(validate_tz(bad).expect_err(bad).field.as_deref(), Some("tz"), "{bad}");
    }
}

// --- cron validation ---

#[test]
fn valid_cron_expressions() {
    for expr in
        ["* * * * *", "*/5 * * * *", "0 9 * * 1-5", "0-30/10 8-18/2 1,15 */3 0,6", "59 23 31 12 6", "0 0 1-31/2 1-12 0-6", "  1\t2 3 4 5 "]
    {
        assert!(validate_cron(expr).is_ok(), "{expr}: {:?}", validate_cron(expr));
    }
}

#[test]
fn cron_errors_name_the_field() {
    assert_eq!(cron_err("1 2 3 4"), "cron needs exactly five fields (minute hour day-of-month month day-of-week), got 4");
    assert_eq!(cron_err("1 2 3 4 5 6"), "cron needs exactly five fields (minute hour day-of-month month day-of-week), got 6");
    assert_eq!(cron_err(""), "cron needs exactly five fields (minute hour day-of-month month day-of-week), got 0");
    assert_eq!(cron_err("60 * * * *"), "minute field \"60\": value 60 out of range 0-59");
    assert_eq!(cron_err("0 25 * * *"), "hour field \"25\": value 25 out of range 0-23");
    assert_eq!(cron_err("0 0 0 * *"), "day-of-month field \"0\": value 0 out of range 1-31");
    assert_eq!(cron_err("0 0 32 * *"), "day-of-month field \"32\": value 32 out of range 1-31");
    assert_eq!(cron_err("0 0 * 13 *"), "month field \"13\": value 13 out of range 1-12");
    assert_eq!(cron_err("0 0 * * 7"), "day-of-week field \"7\": value 7 out of range 0-6");
    assert_eq!(cron_err("*/0 * * * *"), "minute field \"*/0\": step must be at least 1, got 0");
    assert_eq!(cron_err("5-3 * * * *"), "minute field \"5-3\": range start 5 is greater than its end 3");
    assert_eq!(cron_err("a * * * *"), "minute field \"a\": \"a\" is not a number");
    assert_eq!(cron_err("1,,2 * * * *"), "minute field \"1,,2\": empty list item");
    assert_eq!(cron_err("0 * * * mon"), "day-of-week field \"mon\": \"mon\" is not a number");
    assert_eq!(
        cron_err("0 99999999999999999999 * * *"),
        "hour field \"99999999999999999999\": value 99999999999999999999 out of range 0-23"
    );
    for bad in [
        "5/2 * * * *",
        "*/x * * * *",
        "*/ * * * *",
        "-5 * * * *",
        "1- * * * *",
        "1-2-3 * * * *",
        "*/5/2 * * * *",
        ", * * * *",
        "1, * * * *",
        "? * * * *",
        "L * * * *",
        "+5 * * * *",
        "*/61 * * * *",
        "0 0 * * */8",
    ] {
        let message = cron_err(bad);
        assert!(message.starts_with("minute field") || message.starts_with("day-of-week field"), "{bad}: {message}");
    }
}

// --- durations, windows, days ---

#[test]
fn durations() {
    for (s, secs) in [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1h30m", 5400),
        ("1h30m15s", 5415),
        ("2m5s", 125),
        (" 90s ", 90),
        ("05m", 300),
        ("1d", 86_400),
        ("7d12h", 648_000),
    ] {
        assert_eq!(parse_duration(s), Ok(secs), "{s}");
    }
    for bad in [
        "",
        " ",
        "90",
        "5x",
        "5M",
        "1w",
        "1h1d",
        "30m1h",
        "1h1h",
        "0s",
        "1h0m",
        "-5m",
        "1.5h",
        "h",
        "5 m",
        "1h 30m",
        "m5",
        "99999999999999999999s",
        "9999999999999999h",
        "5mé",
    ] {
        let e = parse_duration(bad).expect_err(bad);
        assert_eq!(e.field, None, "{bad}");
        assert!(!e.message.is_empty());
    }
    assert_eq!(parse_duration("90").expect_err("no unit").message, format!("duration \"90\" has no unit after 90 ({DURATION_HINT})"));
}

#[test]
fn windows_and_wrapping_midnight() {
    assert_eq!(parse_window("08:00-18:00"), Ok((480, 1080)));
    assert_eq!(parse_window(" 22:30 - 06:00 "), Ok((1350, 360)));
    assert_eq!(parse_window("23:00-00:00"), Ok((1380, 0)));
    for bad in ["08:00-08:00", "8:0-18:00", "08:00", "08:00-24:00", "08:00_18:00", "", "aa:bb-cc:dd", "08:00-18:00-19:00"] {
        assert_eq!(parse_window(bad).expect_err(bad).field.as_deref(), Some("window"), "{bad}");
    }
    let day = Some((480, 1080));
    assert!(in_window(day, 480) && in_window(day, 1079));
    assert!(!in_window(day, 1080) && !in_window(day, 479));
    let night = Some((1350, 360));
    assert!(in_window(night, 1350) && in_window(night, 1439) && in_window(night, 0) && in_window(night, 359));
    assert!(!in_window(night, 360) && !in_window(night, 720) && !in_window(night, 1349));
    assert!(in_window(None, 0));
    assert!(!in_window(Some((5, 5)), 5));
}

#[test]
fn days() {
    let set = |idx: &[usize]| {
        let mut d = [false; 7];
        for &i in idx {
            d[i] = true;
        }
        d
    };
    assert_eq!(parse_days("mon-fri"), Ok(set(&[1, 2, 3, 4, 5])));
    assert_eq!(parse_days("sat,sun"), Ok(set(&[0, 6])));
    assert_eq!(parse_days("Mon,WED-fri"), Ok(set(&[1, 3, 4, 5])));
    assert_eq!(parse_days("fri-mon"), Ok(set(&[5, 6, 0, 1])));
    assert_eq!(parse_days("sun-sun"), Ok(set(&[0])));
    assert_eq!(parse_days("daily"), Ok([true; 7]));
    assert_eq!(parse_days(" * "), Ok([true; 7]));
    assert_eq!(parse_days(" tue , thu "), Ok(set(&[2, 4])));
    for bad in ["", "monday", "mon-", "mon,,tue", "weekdays", "mon-fri-sat", "1-5", "mön"] {
        assert_eq!(parse_days(bad).expect_err(bad).field.as_deref(), Some("days"), "{bad}");
    }
}

// --- triggers ---

#[test]
fn trigger_modes_that_are_fine() {
    let good = [
        json!({"mode": "manual"}),
        json!({"mode": "schedule", "schedule": {"preset": "weekdays", "time": "09:00", "tz": "Europe/Paris"}}),
        json!({"mode": "heartbeat", "every": "30m"}),
        json!({"mode": "heartbeat", "every": "1m", "window": "22:00-06:00", "days": "mon-fri", "tz": "UTC"}),
        json!({"mode": "heartbeat", "every": "24h", "window": null}),
        json!({"mode": "event", "sources": ["deploy.done", "alerts.*", "a:b-c_d"], "cooldown_seconds": 0}),
        json!({"mode": "folder", "path": "/data/in"}),
        json!({"mode": "folder", "path": "in", "pattern": "*.csv", "events": ["create", "modify", "remove"], "debounce_ms": 60000}),
        json!({"mode": "watch", "command": "tail -f log.ndjson"}),
        json!({"mode": "watch", "command": ["tail", "-f", ""], "restart_delay_seconds": 300, "dedupe_minutes": 0}),
    ];
    for node in good {
        assert_eq!(validate_trigger(&obj(node.clone())), vec![], "{node}");
    }
}

#[test]
fn trigger_problems_name_the_node_field() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec!["mode"]),
        (json!({"mode": null}), vec!["mode"]),
        (json!({"mode": 3}), vec!["mode"]),
        (json!({"mode": "cron"}), vec!["mode"]),
        (json!({"mode": "schedule"}), vec!["schedule"]),
        (json!({"mode": "schedule", "schedule": "daily"}), vec!["schedule"]),
        (json!({"mode": "schedule", "schedule": {"preset": "daily"}}), vec!["schedule"]),
        (json!({"mode": "schedule", "schedule": {"preset": "custom", "cron": "0 9 * *"}}), vec!["schedule"]),
        (json!({"mode": "heartbeat"}), vec!["every"]),
        (json!({"mode": "heartbeat", "every": 30}), vec!["every"]),
        (json!({"mode": "heartbeat", "every": "30s"}), vec!["every"]),
        (json!({"mode": "heartbeat", "every": "25h"}), vec!["every"]),
        (
            json!({"mode": "heartbeat", "every": "5x", "window": "08:00-08:00", "days": "someday", "tz": "Nowhere"}),
            vec!["every", "window", "days", "tz"],
        ),
        (json!({"mode": "heartbeat", "every": "5m", "window": 8, "days": ["mon"]}), vec!["window", "days"]),
        (json!({"mode": "event"}), vec!["sources"]),
        (json!({"mode": "event", "sources": []}), vec!["sources"]),
        (json!({"mode": "event", "sources": "a"}), vec!["sources"]),
        (json!({"mode": "event", "sources": ["ok", "", "a b", "*", ".*", "a*", 5]}), vec!["sources"; 6]),
        (json!({"mode": "event", "sources": ["a"], "cooldown_seconds": -1}), vec!["cooldown_seconds"]),
        (json!({"mode": "event", "sources": ["a"], "cooldown_seconds": 1.5}), vec!["cooldown_seconds"]),
        (json!({"mode": "folder"}), vec!["path"]),
        (json!({"mode": "folder", "path": "  "}), vec!["path"]),
        (json!({"mode": "folder", "path": 1}), vec!["path"]),
        (
            json!({"mode": "folder", "path": "in", "pattern": "", "events": [], "debounce_ms": 60001}),
            vec!["pattern", "events", "debounce_ms"],
        ),
        (
            json!({"mode": "folder", "path": "in", "pattern": 1, "events": ["create", "delete", 3], "debounce_ms": "5"}),
            vec!["pattern", "events", "events", "debounce_ms"],
        ),
        (json!({"mode": "folder", "path": "in", "events": "create"}), vec!["events"]),
        (json!({"mode": "watch"}), vec!["command"]),
        (json!({"mode": "watch", "command": ""}), vec!["command"]),
        (json!({"mode": "watch", "command": []}), vec!["command"]),
        (json!({"mode": "watch", "command": ["", "x"]}), vec!["command"]),
        (json!({"mode": "watch", "command": ["tail", 1]}), vec!["command"]),
        (json!({"mode": "watch", "command": 7}), vec!["command"]),
        (
            json!({"mode": "watch", "command": "x", "restart_delay_seconds": 0, "dedupe_minutes": 1441}),
            vec!["restart_delay_seconds", "dedupe_minutes"],
        ),
        (json!({"mode": "watch", "command": "x", "restart_delay_seconds": 301}), vec!["restart_delay_seconds"]),
        (json!({"mode": "watch", "command": "tail -f {{trigger.path}}"}), vec!["command"]),
        (json!({"mode": "watch", "command": ["tail", "-f", "{{ run.id }}"]}), vec!["command"]),
    ];
    for (node, expected) in cases {
        let issues = validate_trigger(&obj(node.clone()));
        assert_eq!(fields(&issues), expected, "{node}: {issues:?}");
        assert!(issues.iter().all(|e| !e.message.is_empty()));
    }
}

#[test]
fn trigger_messages_are_specific() {
    let issues = validate_trigger(&obj(json!({"mode": "schedule", "schedule": {"preset": "custom", "cron": "0 25 * * *"}})));
    assert_eq!(issues[0].message, "hour field \"25\": value 25 out of range 0-23");
    let issues = validate_trigger(&obj(json!({"mode": "heartbeat", "every": "30s"})));
    assert_eq!(issues[0].message, "every \"30s\" is 30 seconds; a heartbeat must be every 60 to 86400 seconds (1m to 24h)");
    let issues = validate_trigger(&obj(json!({"mode": "event", "sources": ["ok", "a b"]})));
    assert!(issues[0].message.starts_with("sources[1] \"a b\""), "{}", issues[0].message);
    assert!(is_event_name("deploy.done") && !is_event_name("") && !is_event_name("a*"));
}

#[test]
fn wait_seconds_from_either_field() {
    assert_eq!(wait_seconds(&obj(json!({"seconds": 1}))), Ok(1));
    assert_eq!(wait_seconds(&obj(json!({"seconds": 3600}))), Ok(3600));
    assert_eq!(wait_seconds(&obj(json!({"duration": "5m"}))), Ok(300));
    assert_eq!(wait_seconds(&obj(json!({"duration": "1h", "seconds": null}))), Ok(3600));
    let cases = [
        (json!({}), "seconds"),
        (json!({"seconds": 5, "duration": "5s"}), "seconds"),
        (json!({"seconds": 0}), "seconds"),
        (json!({"seconds": 3601}), "seconds"),
        (json!({"seconds": -5}), "seconds"),
        (json!({"seconds": 1.5}), "seconds"),
        (json!({"seconds": "30"}), "seconds"),
        (json!({"duration": "2h"}), "duration"),
        (json!({"duration": "1h1s"}), "duration"),
        (json!({"duration": "30"}), "duration"),
        (json!({"duration": 30}), "duration"),
    ];
    for (node, field) in cases {
        let e = wait_seconds(&obj(node.clone())).expect_err(&node.to_string());
        assert_eq!(e.field.as_deref(), Some(field), "{node}: {e}");
    }
}

// --- next fire ---

#[test]
fn next_fire_is_strictly_after() {
    assert_eq!(next_cron_fire("* * * * *", at(2024, 5, 1, 9, 0)), Some(at(2024, 5, 1, 9, 1)));
    let mid_minute = Utc.with_ymd_and_hms(2024, 5, 1, 9, 0, 30).single().expect("date");
    assert_eq!(next_cron_fire("* * * * *", mid_minute), Some(at(2024, 5, 1, 9, 1)));
    assert_eq!(next_cron_fire("0 9 * * *", at(2024, 5, 1, 9, 0)), Some(at(2024, 5, 2, 9, 0)));
    assert_eq!(next_cron_fire("0 9 * * *", at(2024, 5, 1, 8, 59)), Some(at(2024, 5, 1, 9, 0)));
    assert_eq!(next_cron_fire("*/15 * * * *", at(2024, 5, 1, 9, 50)), Some(at(2024, 5, 1, 10, 0)));
    assert_eq!(next_cron_fire("30 8-10 * * *", at(2024, 5, 1, 9, 45)), Some(at(2024, 5, 1, 10, 30)));
}

#[test]
fn next_fire_crosses_month_and_year_boundaries() {
    assert_eq!(next_cron_fire("0 0 1 * *", at(2024, 1, 31, 12, 0)), Some(at(2024, 2, 1, 0, 0)));
    assert_eq!(next_cron_fire("59 23 31 12 *", at(2024, 12, 31, 23, 59)), Some(at(2025, 12, 31, 23, 59)));
    assert_eq!(next_cron_fire("0 0 * * *", at(2024, 12, 31, 23, 59)), Some(at(2025, 1, 1, 0, 0)));
    assert_eq!(next_cron_fire("0 12 31 * *", at(2024, 4, 1, 0, 0)), Some(at(2024, 5, 31, 12, 0)));
    assert_eq!(next_cron_fire("0 0 29 2 *", at(2024, 3, 1, 0, 0)), Some(at(2028, 2, 29, 0, 0)));
    // weekdays from a Friday evening: the next Monday (2024-05-03 is a Friday).
    assert_eq!(next_cron_fire("0 9 * * 1-5", at(2024, 5, 3, 18, 0)), Some(at(2024, 5, 6, 9, 0)));
    assert_eq!(next_cron_fire("0 9 * 3 *", at(2024, 3, 31, 10, 0)), Some(at(2025, 3, 1, 9, 0)));
}

#[test]
fn next_fire_day_of_month_or_day_of_week() {
    // 2024-05-01 is a Wednesday. "the 15th or any Monday": Monday 6th comes first.
    assert_eq!(next_cron_fire("0 0 15 * 1", at(2024, 5, 1, 0, 0)), Some(at(2024, 5, 6, 0, 0)));
    assert_eq!(next_cron_fire("0 0 15 * 1", at(2024, 5, 13, 0, 0)), Some(at(2024, 5, 15, 0, 0)));
    // Only one restricted: the other is ignored.
    assert_eq!(next_cron_fire("0 0 15 * *", at(2024, 5, 1, 0, 0)), Some(at(2024, 5, 15, 0, 0)));
    assert_eq!(next_cron_fire("0 0 * * 1", at(2024, 5, 1, 0, 0)), Some(at(2024, 5, 6, 0, 0)));
    // `*/1` starts with `*`, so it counts as unrestricted (as in cronie): Mondays only.
    assert_eq!(next_cron_fire("0 0 */1 * 1", at(2024, 5, 1, 0, 0)), Some(at(2024, 5, 6, 0, 0)));
}

#[test]
fn day_fields_starting_with_a_star_are_unrestricted_as_in_cronie() {
    // Mondays that are odd days of the month: 2026-06-01, 06-15 and 06-29 (not 06-08).
    let from = at(2026, 6, 1, 10, 0);
    assert_eq!(next_cron_fire("0 9 */2 * 1", from), Some(at(2026, 6, 15, 9, 0)));
    assert_eq!(next_cron_fire("0 9 */2 * 1", at(2026, 6, 15, 10, 0)), Some(at(2026, 6, 29, 9, 0)));
    // The first of a month that falls on Sunday, Tuesday, Thursday or Saturday.
    assert_eq!(next_cron_fire("0 9 1 * */2", from), Some(at(2026, 8, 1, 9, 0)));
    // A list starting with `*` is unrestricted too; one starting with a number is not.
    assert_eq!(next_cron_fire("0 9 */10,5 * 1", from), Some(at(2026, 8, 31, 9, 0)));
    assert_eq!(next_cron_fire("0 9 5,*/10 * 1", from), Some(at(2026, 6, 5, 9, 0)));
    // Both restricted: a day matches either.
    assert_eq!(next_cron_fire("0 9 2-3 * 1", from), Some(at(2026, 6, 2, 9, 0)));
}

#[test]
fn an_expression_that_can_never_fire_is_an_error() {
    for never in ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "0 0 30-31 2 *", "0 0 31 4 */2", "0 0 31 2 *\t", "* * 31 4-6/2 *"] {
        let e = validate_cron(never).expect_err(never);
        assert_eq!(e.field.as_deref(), Some("cron"));
        assert!(e.message.contains("never fires"), "{never}: {e}");
        assert_eq!(next_cron_fire(never, at(2024, 1, 1, 0, 0)), None);
        let custom = sched(json!({"preset": "custom", "cron": never})).expect_err(never);
        assert!(custom.message.contains("never fires"), "{custom}");
    }
    assert_eq!(cron_err("0 0 30 2 *"), "\"0 0 30 2 *\" never fires: no day-of-month in \"30\" occurs in month \"2\"");
    // Rare is not never: 29 February, and 29 February on a Sunday (2032, then 2060).
    assert_eq!(next_cron_fire("0 0 29 2 *", at(2025, 1, 1, 0, 0)), Some(at(2028, 2, 29, 0, 0)));
    assert_eq!(next_cron_fire("0 0 29 2 */7", at(2024, 3, 1, 0, 0)), Some(at(2032, 2, 29, 0, 0)));
    assert_eq!(next_cron_fire("0 0 29 2 */7", at(2032, 3, 1, 0, 0)), Some(at(2060, 2, 29, 0, 0)));
    // 2100 is no leap year: after 2088 the next 29 February on a Sunday is in 2128.
    assert_eq!(next_cron_fire("0 0 29 2 */7", at(2088, 3, 1, 0, 0)), Some(at(2128, 2, 29, 0, 0)));
    // Both day fields restricted: any Monday in February will do.
    assert_eq!(next_cron_fire("0 0 31 2 1", at(2026, 1, 1, 0, 0)), Some(at(2026, 2, 2, 0, 0)));
}

#[test]
fn only_spaces_and_tabs_separate_fields() {
    for ok in ["0 9 * * 1", "0\t9\t*\t*\t1", " \t0  9 *\t \t* 1 \t"] {
        assert!(validate_cron(ok).is_ok(), "{ok:?}");
        assert_eq!(sched(json!({"preset": "custom", "cron": ok})).expect(ok), ok.trim_matches([' ', '\t']));
    }
    // Every other whitespace or control character, between fields, inside one or at an end.
    let others = (0..=0x10FFFF_u32).filter_map(char::from_u32).filter(|c| (c.is_whitespace() || c.is_control()) && *c != ' ' && *c != '\t');
    let mut tried = 0;
    for c in others {
        for (expr, at_an_end) in [
            (format!("0{c}9 * * 1"), false),
            (format!("0 9 * * 1{c}"), true),
            (format!("{c}0 9 * * 1"), true),
            (format!("0 9 *{c}* 1"), false),
        ] {
            let e = validate_cron(&expr).expect_err(&format!("{expr:?}"));
            let code = format!("U+{:04X}", u32::from(c));
            assert!(e.message.contains(&code) && e.message.contains("spaces or tabs only"), "{expr:?}: {e}");
            // A custom schedule trims whitespace at the ends (a pasted line's newline), not inside.
            match sched(json!({"preset": "custom", "cron": expr})) {
                Ok(cron) => assert!(at_an_end && c.is_whitespace() && cron == "0 9 * * 1", "{expr:?} gave {cron:?}"),
                Err(_) => assert!(!(at_an_end && c.is_whitespace()), "{expr:?} was refused"),
            }
        }
        tried += 1;
    }
    assert!(tried > 60, "{tried}");
    assert_eq!(
        cron_err("0 9 *\u{b}* 1"),
        "day-of-month field \"*\\u{b}*\" contains U+000B: cron fields are separated by spaces or tabs only"
    );
}

#[test]
fn negative_numbers_get_a_clear_message() {
    assert_eq!(cron_err("-1 * * * *"), "minute field \"-1\": negative numbers are not allowed; the minute takes 0-59");
    for (expr, field) in [
        ("* -5 * * *", "hour"),
        ("* * -1-5 * *", "day-of-month"),
        ("* * 1--5 * *", "day-of-month"),
        ("* * * */-2 *", "month"),
        ("* * * * 1,-2", "day-of-week"),
        ("-0 * * * *", "minute"),
        ("* * * * -1-3/2", "day-of-week"),
    ] {
        let e = cron_err(expr);
        assert!(e.starts_with(&format!("{field} field")) && e.contains("negative numbers are not allowed"), "{expr}: {e}");
    }
}

#[test]
fn next_fire_gives_up_without_panicking() {
    assert_eq!(next_cron_fire("0 0 31 2 *", at(2024, 1, 1, 0, 0)), None);
    assert_eq!(next_cron_fire("0 0 30 2 *", at(2024, 1, 1, 0, 0)), None);
    assert_eq!(next_cron_fire("not cron", at(2024, 1, 1, 0, 0)), None);
    assert_eq!(next_cron_fire("* * * * *", DateTime::<Utc>::MAX_UTC), None);
    assert_eq!(next_cron_fire("0 0 1 1 *", DateTime::<Utc>::MAX_UTC - chrono::TimeDelta::days(30)), None);
    assert!(next_cron_fire("* * * * *", DateTime::<Utc>::MIN_UTC).is_some());
}

// --- time zones and daylight saving ---

fn at_s(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).single().expect("valid test date")
}

const BERLIN: Option<&str> = Some("Europe/Berlin");
const NEW_YORK: Option<&str> = Some("America/New_York");

#[test]
fn bad_tz_name_is_rejected_naming_field_tz() {
    let e = validate_tz("Europe/Atlantis").expect_err("unknown zone");
    assert_eq!(e.field.as_deref(), Some("tz"));
    assert!(e.message.contains("Europe/Atlantis"), "{e}");
    let e = sched(json!({"preset": "daily", "time": "09:00", "tz": "Mars/Olympus_Mons"})).expect_err("unknown zone");
    assert_eq!(e.field.as_deref(), Some("tz"));
    let issues = validate_trigger(&obj(json!({"mode": "heartbeat", "every": "30m", "tz": "Moon/Tranquility"})));
    assert_eq!(fields(&issues), ["tz"]);
    assert_eq!(
        heartbeat_from_node(&obj(json!({"mode": "heartbeat", "every": "30m", "tz": "Nowhere"})))
            .expect_err("unknown zone")
            .field
            .as_deref(),
        Some("tz")
    );
    assert_eq!(next_cron_fire_tz("* * * * *", Some("Nowhere"), at(2026, 1, 1, 0, 0)), None);
    assert_eq!(parse_tz(" Europe/Berlin "), Ok(chrono_tz::Europe::Berlin));
    assert_eq!(parse_tz("Z"), Ok(Tz::UTC));
}

#[test]
fn cron_without_tz_is_utc() {
    for after in [at(2026, 3, 28, 12, 0), at(2026, 10, 24, 12, 0)] {
        assert_eq!(next_cron_fire_tz("30 2 * * *", None, after), next_cron_fire("30 2 * * *", after));
        assert_eq!(next_cron_fire_tz("30 2 * * *", Some("UTC"), after), next_cron_fire("30 2 * * *", after));
    }
}

#[test]
fn cron_wall_time_in_a_spring_forward_gap_fires_when_the_gap_ends() {
    // Europe/Berlin skips 02:00-03:00 on 2026-03-29 (01:00Z): 02:30 does not exist that day.
    let fire = |after| next_cron_fire_tz("30 2 * * *", BERLIN, after);
    assert_eq!(fire(at(2026, 3, 27, 12, 0)), Some(at(2026, 3, 28, 1, 30)));
    assert_eq!(fire(at(2026, 3, 28, 12, 0)), Some(at(2026, 3, 29, 1, 0)));
    assert_eq!(fire(at(2026, 3, 29, 1, 0)), Some(at(2026, 3, 30, 0, 30)));
    // Two wall times inside the same gap fire once, at its end.
    let every_half_hour = |after| next_cron_fire_tz("0,30 2,3 * * *", BERLIN, after);
    assert_eq!(every_half_hour(at(2026, 3, 28, 12, 0)), Some(at(2026, 3, 29, 1, 0)));
    assert_eq!(every_half_hour(at(2026, 3, 29, 1, 0)), Some(at(2026, 3, 29, 1, 30)));
    // America/New_York skips 02:00-03:00 on 2026-03-08 (07:00Z).
    let fire = |after| next_cron_fire_tz("30 2 * * *", NEW_YORK, after);
    assert_eq!(fire(at(2026, 3, 6, 12, 0)), Some(at(2026, 3, 7, 7, 30)));
    assert_eq!(fire(at(2026, 3, 7, 12, 0)), Some(at(2026, 3, 8, 7, 0)));
    assert_eq!(fire(at(2026, 3, 8, 7, 0)), Some(at(2026, 3, 9, 6, 30)));
}

#[test]
fn cron_wall_time_repeated_at_fall_back_fires_once_at_its_first_occurrence_unless_the_job_fires_every_hour() {
    // Europe/Berlin repeats 02:00-03:00 on 2026-10-25: CEST until 01:00Z, then CET.
    let fire = |after| next_cron_fire_tz("30 2 * * *", BERLIN, after);
    assert_eq!(fire(at(2026, 10, 24, 12, 0)), Some(at(2026, 10, 25, 0, 30)));
    assert_eq!(fire(at(2026, 10, 25, 0, 30)), Some(at(2026, 10, 26, 1, 30)));
    // Asked during the second 02:xx hour: today's 02:30 already happened.
    assert_eq!(fire(at(2026, 10, 25, 1, 0)), Some(at(2026, 10, 26, 1, 30)));
    assert_eq!(fire(at_s(2026, 10, 25, 1, 29, 59)), Some(at(2026, 10, 26, 1, 30)));
    // A job that fires every hour keeps its rhythm through the repeated hour: 02:00 and
    // 02:30 come round again in CET (01:00Z, 01:30Z).
    let half_hourly = |after| next_cron_fire_tz("*/30 * * * *", BERLIN, after);
    assert_eq!(half_hourly(at(2026, 10, 25, 0, 30)), Some(at(2026, 10, 25, 1, 0)));
    assert_eq!(half_hourly(at(2026, 10, 25, 1, 0)), Some(at(2026, 10, 25, 1, 30)));
    assert_eq!(half_hourly(at(2026, 10, 25, 1, 15)), Some(at(2026, 10, 25, 1, 30)));
    assert_eq!(half_hourly(at(2026, 10, 25, 1, 30)), Some(at(2026, 10, 25, 2, 0)));
    // A job restricted to some hours still fires once per wall time.
    let two_oclock = |after| next_cron_fire_tz("*/30 2 * * *", BERLIN, after);
    assert_eq!(two_oclock(at(2026, 10, 25, 0, 30)), Some(at(2026, 10, 26, 1, 0)));
    // America/New_York repeats 01:00-02:00 on 2026-11-01: EDT until 06:00Z, then EST.
    let fire = |after| next_cron_fire_tz("30 1 * * *", NEW_YORK, after);
    assert_eq!(fire(at(2026, 10, 31, 12, 0)), Some(at(2026, 11, 1, 5, 30)));
    assert_eq!(fire(at(2026, 11, 1, 5, 30)), Some(at(2026, 11, 2, 6, 30)));
}

#[test]
fn cron_keeps_its_local_wall_time_across_daylight_saving_changes() {
    let daily = |after| next_cron_fire_tz("0 9 * * *", BERLIN, after);
    assert_eq!(daily(at(2026, 3, 28, 0, 0)), Some(at(2026, 3, 28, 8, 0)));
    assert_eq!(daily(at(2026, 3, 28, 8, 0)), Some(at(2026, 3, 29, 7, 0)));
    assert_eq!(daily(at(2026, 10, 24, 0, 0)), Some(at(2026, 10, 24, 7, 0)));
    assert_eq!(daily(at(2026, 10, 24, 7, 0)), Some(at(2026, 10, 25, 8, 0)));
    let daily = |after| next_cron_fire_tz("0 9 * * *", NEW_YORK, after);
    assert_eq!(daily(at(2026, 3, 7, 0, 0)), Some(at(2026, 3, 7, 14, 0)));
    assert_eq!(daily(at(2026, 3, 7, 14, 0)), Some(at(2026, 3, 8, 13, 0)));
    assert_eq!(daily(at(2026, 10, 31, 13, 0)), Some(at(2026, 11, 1, 14, 0)));
}

#[test]
fn presets_fire_at_local_time_in_their_tz() {
    let fire = |schedule: Value, after| next_schedule_fire(&schedule_from_value(&schedule).expect("schedule"), after);
    let berlin_daily = json!({"preset": "daily", "time": "09:00", "tz": "Europe/Berlin"});
    assert_eq!(fire(berlin_daily.clone(), at(2026, 3, 28, 8, 0)), Some(at(2026, 3, 29, 7, 0)));
    assert_eq!(fire(berlin_daily, at(2026, 10, 24, 7, 0)), Some(at(2026, 10, 25, 8, 0)));
    let berlin_night = json!({"preset": "daily", "time": "02:30", "tz": "Europe/Berlin"});
    assert_eq!(fire(berlin_night.clone(), at(2026, 3, 28, 12, 0)), Some(at(2026, 3, 29, 1, 0)));
    assert_eq!(fire(berlin_night, at(2026, 10, 25, 0, 30)), Some(at(2026, 10, 26, 1, 30)));
    // Friday 2026-03-06 in New York, EST; the Monday after is EDT.
    let weekdays = json!({"preset": "weekdays", "time": "09:00", "tz": "America/New_York"});
    assert_eq!(fire(weekdays.clone(), at(2026, 3, 6, 12, 0)), Some(at(2026, 3, 6, 14, 0)));
    assert_eq!(fire(weekdays, at(2026, 3, 6, 14, 0)), Some(at(2026, 3, 9, 13, 0)));
    let weekly = json!({"preset": "weekly", "time": "02:30", "dow": 0, "tz": "America/New_York"});
    assert_eq!(fire(weekly, at(2026, 3, 1, 12, 0)), Some(at(2026, 3, 8, 7, 0)));
    let hourly = json!({"preset": "hourly", "minute": 15, "tz": "Asia/Kolkata"});
    assert_eq!(fire(hourly, at(2026, 6, 1, 0, 0)), Some(at(2026, 6, 1, 0, 45)));
    assert_eq!(fire(json!({"preset": "daily"}), at(2026, 6, 1, 0, 0)), None);
}

fn heartbeat(node: Value) -> Heartbeat {
    heartbeat_from_node(&obj(node.clone())).unwrap_or_else(|e| panic!("{node}: {e}"))
}

#[test]
fn heartbeat_reads_its_node_with_defaults() {
    assert_eq!(
        heartbeat(json!({"mode": "heartbeat", "every": "30m"})),
        Heartbeat { every_seconds: 1800, window: None, days: [true; 7], tz: Tz::UTC }
    );
    assert_eq!(
        heartbeat(json!({"every": "1h30m", "window": "22:00-06:00", "days": "mon-fri", "tz": "Europe/Berlin", "window_note": 1})),
        Heartbeat {
            every_seconds: 5400,
            window: Some((1320, 360)),
            days: [false, true, true, true, true, true, false],
            tz: chrono_tz::Europe::Berlin,
        }
    );
    for (node, field) in [
        (json!({"mode": "heartbeat"}), "every"),
        (json!({"mode": "heartbeat", "every": "30s"}), "every"),
        (json!({"mode": "schedule", "every": "30m"}), "mode"),
        (json!({"mode": "heartbeat", "every": "30m", "window": "8-18"}), "window"),
        (json!({"mode": "heartbeat", "every": "30m", "days": "someday"}), "days"),
        (json!({"mode": "heartbeat", "every": "30m", "tz": "Paris"}), "tz"),
    ] {
        let e = heartbeat_from_node(&obj(node.clone())).expect_err(&node.to_string());
        assert_eq!(e.field.as_deref(), Some(field), "{node}: {e}");
    }
}

#[test]
fn heartbeat_fires_every_interval_only_inside_the_window_on_allowed_days() {
    // Europe/Berlin in June is UTC+2. 2026-06-05 is a Friday, 2026-06-08 the Monday after.
    let hb = heartbeat(json!({"mode": "heartbeat", "every": "30m", "window": "08:00-18:00", "days": "mon-fri", "tz": "Europe/Berlin"}));
    // Friday 17:20 -> 17:50, still inside.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 5, 15, 25), Some(at(2026, 6, 5, 15, 20))), Some(at(2026, 6, 5, 15, 50)));
    // Friday 17:45 -> 18:15 is outside: next Monday 08:00 local.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 5, 15, 50), Some(at(2026, 6, 5, 15, 45))), Some(at(2026, 6, 8, 6, 0)));
    // The window's end is exclusive: Friday 17:30 -> 18:00 is outside.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 5, 15, 31), Some(at(2026, 6, 5, 15, 30))), Some(at(2026, 6, 8, 6, 0)));
    // No fire yet: now, when inside; else the next opening.
    let wednesday_noon = at_s(2026, 6, 3, 10, 34, 56);
    assert_eq!(hb.next_heartbeat(wednesday_noon, None), Some(wednesday_noon));
    assert_eq!(hb.next_heartbeat(at(2026, 6, 6, 8, 0), None), Some(at(2026, 6, 8, 6, 0)));
    assert_eq!(hb.next_heartbeat(at(2026, 6, 3, 5, 59), None), Some(at(2026, 6, 3, 6, 0)));
    // Missed ticks are caught up once, now.
    assert_eq!(hb.next_heartbeat(wednesday_noon, Some(at(2026, 6, 1, 7, 0))), Some(wednesday_noon));
    // The tick itself when it is inside, even long after the window opened.
    let every_90 = heartbeat(json!({"every": "90m", "window": "08:00-18:00"}));
    assert_eq!(every_90.next_heartbeat(at(2026, 6, 6, 9, 0), Some(at(2026, 6, 6, 9, 0))), Some(at(2026, 6, 6, 10, 30)));
    assert_eq!(every_90.next_heartbeat(at(2026, 6, 6, 17, 0), Some(at(2026, 6, 6, 17, 0))), Some(at(2026, 6, 7, 8, 0)));
}

#[test]
fn heartbeat_window_wrapping_midnight_belongs_to_the_day_it_starts_on() {
    // UTC; 2026-06-05 is a Friday.
    let hb = heartbeat(json!({"mode": "heartbeat", "every": "30m", "window": "22:00-06:00", "days": "mon-fri"}));
    // Friday 23:30 -> Saturday 00:00: still Friday's window.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 5, 23, 31), Some(at(2026, 6, 5, 23, 30))), Some(at(2026, 6, 6, 0, 0)));
    // Saturday 05:30 -> 06:00 closes it; Saturday and Sunday open none: Monday 22:00.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 6, 5, 31), Some(at(2026, 6, 6, 5, 30))), Some(at(2026, 6, 8, 22, 0)));
    // Monday 03:00 would be Sunday's window: closed.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 8, 3, 0), None), Some(at(2026, 6, 8, 22, 0)));
    // Tuesday 02:00 is Monday's window: open.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 9, 2, 0), None), Some(at(2026, 6, 9, 2, 0)));
    // Daytime is outside: the evening opening.
    assert_eq!(hb.next_heartbeat(at(2026, 6, 9, 12, 0), None), Some(at(2026, 6, 9, 22, 0)));
}

#[test]
fn heartbeat_interval_is_real_elapsed_time_across_daylight_saving_changes() {
    let hourly = heartbeat(json!({"mode": "heartbeat", "every": "1h", "tz": "Europe/Berlin"}));
    // 01:30 CET -> 03:30 CEST: two wall hours, one real hour.
    assert_eq!(hourly.next_heartbeat(at(2026, 3, 29, 0, 31), Some(at(2026, 3, 29, 0, 30))), Some(at(2026, 3, 29, 1, 30)));
    // 02:30 CEST -> 02:30 CET: no wall time passes, one real hour does.
    assert_eq!(hourly.next_heartbeat(at(2026, 10, 25, 0, 31), Some(at(2026, 10, 25, 0, 30))), Some(at(2026, 10, 25, 1, 30)));
    // The window opens at 08:00 local whatever the offset: 07:00Z in CET, 06:00Z in CEST.
    let business = heartbeat(json!({"every": "30m", "window": "08:00-18:00", "tz": "Europe/Berlin"}));
    assert_eq!(business.next_heartbeat(at(2026, 3, 27, 16, 50), Some(at(2026, 3, 27, 16, 45))), Some(at(2026, 3, 28, 7, 0)));
    assert_eq!(business.next_heartbeat(at(2026, 3, 28, 16, 50), Some(at(2026, 3, 28, 16, 45))), Some(at(2026, 3, 29, 6, 0)));
    // An opening inside the gap happens when the gap ends; one in the repeated hour, first.
    let night = heartbeat(json!({"every": "10m", "window": "02:30-04:00", "tz": "Europe/Berlin"}));
    assert_eq!(night.next_heartbeat(at(2026, 3, 28, 12, 0), None), Some(at(2026, 3, 29, 1, 0)));
    assert_eq!(night.next_heartbeat(at(2026, 10, 24, 12, 0), None), Some(at(2026, 10, 25, 0, 30)));
    // 02:55 CEST + 10m = 02:05 CET, back before the window: it reopens at 02:30 CET.
    assert_eq!(night.next_heartbeat(at(2026, 10, 25, 0, 56), Some(at(2026, 10, 25, 0, 55))), Some(at(2026, 10, 25, 1, 30)));
    // In the repeated hour the wall clock is inside the window both times.
    assert_eq!(night.next_heartbeat(at(2026, 10, 25, 1, 35), Some(at(2026, 10, 25, 1, 30))), Some(at(2026, 10, 25, 1, 40)));
}

#[test]
fn heartbeat_without_any_allowed_day_never_fires() {
    let hb = Heartbeat { every_seconds: 60, window: None, days: [false; 7], tz: Tz::UTC };
    assert_eq!(hb.next_heartbeat(at(2026, 1, 1, 0, 0), None), None);
    let hb = Heartbeat { days: [true; 7], ..hb };
    assert_eq!(hb.next_heartbeat(DateTime::<Utc>::MAX_UTC, Some(DateTime::<Utc>::MAX_UTC)), None);
    assert_eq!(Heartbeat { every_seconds: u64::MAX, ..hb.clone() }.next_heartbeat(at(2026, 1, 1, 0, 0), Some(at(2026, 1, 1, 0, 0))), None);
}

fn json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[ -~]{0,12}".prop_map(Value::String),
        prop::sample::select(vec!["30m", "1h", "08:00-18:00", "mon-fri", "UTC", "a.*", "create", "daily", "09:00", "*/5 * * * *"])
            .prop_map(|s| json!(s)),
        prop::collection::vec("[a-z.*]{0,6}", 0..3).prop_map(|v| json!(v)),
        Just(json!({"preset": "custom", "cron": "* * * * *"})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn string_parsers_never_panic(s in any::<String>(), c in "[0-9*/,\\- a-z:]{0,30}", minute in 0u32..2000) {
        for input in [s.as_str(), c.as_str()] {
            let _ = validate_cron(input);
            let _ = human(input);
            let _ = next_cron_fire(input, at(2024, 2, 29, 23, 59));
            let _ = parse_duration(input);
            let _ = parse_window(input).map(|w| in_window(Some(w), minute));
            let _ = parse_days(input);
            let _ = validate_tz(input);
            let _ = next_cron_fire_tz(input, Some(input), at(2026, 3, 29, 0, 59));
        }
    }

    #[test]
    fn zone_aware_fires_never_panic(
        cron in prop::sample::select(vec!["* * * * *", "30 2 * * *", "*/7 1-3 * * 0", "0 0 29 2 *", "0 0 31 2 *", "59 23 31 12 *"]),
        tz in prop::sample::select(vec!["UTC", "Europe/Berlin", "America/New_York", "Pacific/Apia", "Australia/Lord_Howe", "Asia/Kathmandu", "Nowhere"]),
        secs in prop_oneof![any::<i64>(), 1_700_000_000i64..1_900_000_000],
        last_secs in prop::option::of(prop_oneof![any::<i64>(), 1_700_000_000i64..1_900_000_000]),
        every in prop_oneof![60u64..86_400, any::<u64>()],
        window in prop::option::of((0u32..1440, 0u32..1440)),
        days in any::<[bool; 7]>(),
    ) {
        let instant = |s: i64| DateTime::from_timestamp(s, 0).unwrap_or(DateTime::<Utc>::MAX_UTC);
        let after = instant(secs);
        if let Some(t) = next_cron_fire_tz(cron, Some(tz), after) {
            prop_assert!(t > after);
        }
        let zone = parse_tz(tz).unwrap_or(Tz::UTC);
        let hb = Heartbeat { every_seconds: every, window, days, tz: zone };
        if let Some(t) = hb.next_heartbeat(after, last_secs.map(instant)) {
            prop_assert!(t >= after);
        }
    }

    #[test]
    fn node_validators_never_panic(
        mode in prop::sample::select(vec!["manual", "schedule", "heartbeat", "event", "folder", "watch", "x"]),
        keys in prop::collection::vec(prop::sample::select(vec![
            "schedule", "every", "window", "days", "tz", "sources", "cooldown_seconds", "path", "pattern",
            "events", "debounce_ms", "command", "restart_delay_seconds", "dedupe_minutes", "seconds", "duration",
        ]), 0..6),
        values in prop::collection::vec(json_value(), 6),
    ) {
        let mut node = Map::new();
        node.insert("mode".into(), json!(mode));
        for (k, v) in keys.iter().zip(values) {
            node.insert((*k).to_string(), v);
        }
        let _ = validate_trigger(&node);
        let _ = wait_seconds(&node);
        if let Ok(hb) = heartbeat_from_node(&node) {
            let _ = hb.next_heartbeat(at(2026, 10, 25, 0, 59), Some(at(2026, 10, 25, 0, 30)));
        }
        if let Some(v) = node.get("schedule") {
            let _ = schedule_from_value(v).and_then(|s| to_cron(&s));
        }
    }
}

#[test]
fn heartbeat_never_fires_outside_its_window_across_a_clock_change() {
    // New York springs forward on 2026-03-08: 02:00 EST becomes 03:00 EDT. A window of
    // 02:00-02:30 does not exist that day, so nothing fires until it opens on the 9th.
    let night = heartbeat(json!({"every": "10m", "window": "02:00-02:30", "tz": "America/New_York"}));
    // 02:00 EDT on the 9th is 06:00Z.
    assert_eq!(night.next_heartbeat(at(2026, 3, 7, 12, 0), None), Some(at(2026, 3, 9, 6, 0)));
    assert_eq!(night.next_heartbeat(at(2026, 3, 8, 6, 59), Some(at(2026, 3, 7, 7, 20))), Some(at(2026, 3, 9, 6, 0)));
    // A window reaching past the gap opens when the gap ends, 03:00 EDT.
    let wider = heartbeat(json!({"every": "10m", "window": "02:00-03:30", "tz": "America/New_York"}));
    assert_eq!(wider.next_heartbeat(at(2026, 3, 7, 12, 0), None), Some(at(2026, 3, 8, 7, 0)));
    // A tick that the clock change pushes past the window's end waits for the next opening.
    let early = heartbeat(json!({"every": "10m", "window": "01:30-02:30", "tz": "America/New_York"}));
    assert_eq!(early.next_heartbeat(at(2026, 3, 8, 6, 51), Some(at(2026, 3, 8, 6, 50))), Some(at(2026, 3, 9, 5, 30)));
}

/// A cron expression as structured items, to render it and to know its sets without the
/// parser under test.
#[derive(Debug, Clone)]
enum Item {
    Star,
    StarStep(u32),
    Value(u32),
    Range(u32, u32),
    RangeStep(u32, u32, u32),
}

impl Item {
    fn text(&self) -> String {
        match self {
            Item::Star => "*".into(),
            Item::StarStep(n) => format!("*/{n}"),
            Item::Value(v) => v.to_string(),
            Item::Range(a, b) => format!("{a}-{b}"),
            Item::RangeStep(a, b, n) => format!("{a}-{b}/{n}"),
        }
    }
    fn values(&self, lo: u32, hi: u32) -> Vec<u32> {
        let (a, b, n) = match *self {
            Item::Star => (lo, hi, 1),
            Item::StarStep(n) => (lo, hi, n),
            Item::Value(v) => (v, v, 1),
            Item::Range(a, b) => (a, b, 1),
            Item::RangeStep(a, b, n) => (a, b, n),
        };
        (a..=b).step_by(n as usize).collect()
    }
}

fn item(lo: u32, hi: u32) -> impl Strategy<Value = Item> {
    let span = hi - lo + 1;
    prop_oneof![
        1 => Just(Item::Star),
        2 => (1..=span).prop_map(Item::StarStep),
        3 => (lo..=hi).prop_map(Item::Value),
        2 => (lo..=hi, lo..=hi).prop_map(|(a, b)| Item::Range(a.min(b), a.max(b))),
        2 => (lo..=hi, lo..=hi, 1..=span).prop_map(|(a, b, n)| Item::RangeStep(a.min(b), a.max(b), n)),
    ]
}

/// The brute-force reference: sets per field and cronie's day rule, nothing else.
#[derive(Debug, Clone)]
struct Reference {
    text: String,
    sets: [Vec<u32>; 5],
    dom_star: bool,
    dow_star: bool,
}

impl Reference {
    fn day(&self, d: NaiveDate) -> bool {
        let dom = self.sets[2].contains(&d.day());
        let dow = self.sets[4].contains(&d.weekday().num_days_from_sunday());
        self.sets[3].contains(&d.month()) && if self.dom_star || self.dow_star { dom && dow } else { dom || dow }
    }
    fn minute(&self, t: NaiveDateTime) -> bool {
        self.sets[0].contains(&t.minute()) && self.sets[1].contains(&t.hour()) && self.day(t.date())
    }
    /// The first matching minute at or after `from`: minute by minute through the first two
    /// days, then day by day through one 400-year cycle (a matching day always holds a
    /// matching minute), minute by minute inside the day found.
    fn first_from(&self, from: NaiveDateTime) -> Option<NaiveDateTime> {
        let mut t = from;
        for _ in 0..2 * 1440 {
            if self.minute(t) {
                return Some(t);
            }
            t += TimeDelta::minutes(1);
        }
        let mut d = t.date();
        for _ in 0..=146_097 {
            if self.day(d) {
                let mut m = d.and_hms_opt(0, 0, 0)?.max(t);
                while !self.minute(m) {
                    m += TimeDelta::minutes(1);
                }
                return Some(m);
            }
            d = d.succ_opt()?;
        }
        None
    }
}

fn cron_expression() -> impl Strategy<Value = Reference> {
    let field = |lo: u32, hi: u32| prop::collection::vec(item(lo, hi), 1..4);
    // Day fields often rare: late days of month, short months, a star-led weekday step.
    let dom = prop_oneof![3 => field(1, 31), 1 => prop::collection::vec((28u32..=31).prop_map(Item::Value), 1..3)];
    let month = prop_oneof![3 => field(1, 12), 1 => prop::sample::subsequence(vec![2u32, 4, 6, 9, 11], 1..4).prop_map(|ms| ms.into_iter().map(Item::Value).collect())];
    (field(0, 59), field(0, 23), dom, month, field(0, 6)).prop_map(|(mi, h, dom, mo, dow)| {
        let fields = [mi, h, dom, mo, dow];
        let bounds = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];
        let sets: [Vec<u32>; 5] = std::array::from_fn(|i| {
            let mut v: Vec<u32> = fields[i].iter().flat_map(|it| it.values(bounds[i].0, bounds[i].1)).collect();
            v.sort_unstable();
            v.dedup();
            v
        });
        let star = |f: &[Item]| matches!(f[0], Item::Star | Item::StarStep(_));
        let text = fields.iter().map(|f| f.iter().map(Item::text).collect::<Vec<_>>().join(",")).collect::<Vec<_>>().join(" ");
        Reference { dom_star: star(&fields[2]), dow_star: star(&fields[4]), sets, text }
    })
}

/// Whether the reference rule puts instant `t` inside the heartbeat's window, read on the
/// wall clock of its zone through chrono's own conversion.
fn inside_window(hb: &Heartbeat, t: DateTime<Utc>) -> bool {
    let local = t.with_timezone(&hb.tz);
    let minute = local.hour() * 60 + local.minute();
    let today = local.weekday().num_days_from_sunday() as usize;
    let yesterday = (today + 6) % 7;
    match hb.window {
        None => hb.days[today],
        Some((start, end)) if start < end => hb.days[today] && (start..end).contains(&minute),
        Some((start, end)) => (hb.days[today] && minute >= start) || (hb.days[yesterday] && minute < end),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn next_cron_fire_matches_a_brute_force_walk(cron in cron_expression(), secs in 0i64..13_000_000_000, offset in prop::sample::select(vec![None, Some("Asia/Kolkata")])) {
        let after = DateTime::from_timestamp(secs, 0).expect("in range");
        // Kolkata keeps +05:30 all year since 1945: walls are the instant plus the offset.
        let shift = TimeDelta::minutes(if offset.is_some() { 330 } else { 0 });
        let wall = after.naive_utc() + shift;
        let from = wall.date().and_hms_opt(wall.hour(), wall.minute(), 0).expect("minute") + TimeDelta::minutes(1);
        let expected = cron.first_from(from).map(|w| (w - shift).and_utc());
        let valid = validate_cron(&cron.text);
        prop_assert_eq!(valid.is_ok(), expected.is_some(), "{} {:?}: validation says {:?}", cron.text, cron, valid);
        prop_assert_eq!(next_cron_fire_tz(&cron.text, offset, after), expected, "{}", cron.text);
    }

    #[test]
    fn a_heartbeat_fires_only_inside_its_window(
        every in prop_oneof![60u64..=86_400, Just(600), Just(3600)],
        // Windows often near the hours the clocks change, often short enough to fit a gap.
        start in prop_oneof![0u32..1440, 0u32..200, 120u32..150],
        length in prop_oneof![1u32..1440, 1u32..60],
        windowed in prop::bool::weighted(0.9),
        days in any::<[bool; 7]>().prop_filter("some day", |d| d.iter().any(|x| *x)),
        tz in prop::sample::select(vec!["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Havana", "Pacific/Apia", "Asia/Tehran", "UTC"]),
        near in prop::sample::select(vec![
            at(2026, 3, 8, 7, 0), at(2026, 11, 1, 6, 0), at(2026, 3, 29, 1, 0), at(2026, 10, 25, 1, 0),
            at(2026, 4, 4, 15, 0), at(2026, 10, 3, 15, 0), at(2026, 3, 8, 5, 0), at(2026, 11, 1, 5, 0),
            at(2011, 12, 29, 10, 0), at(2022, 3, 21, 20, 0),
        ]),
        before_secs in prop_oneof![0i64..(3 * 86_400), 0i64..(8 * 3600)],
        last_gap in prop::option::of(0i64..(2 * 86_400)),
    ) {
        let zone = parse_tz(tz).expect("zone");
        let window = windowed.then_some((start, (start + length) % 1440)).filter(|(a, b)| a != b);
        let hb = Heartbeat { every_seconds: every, window, days, tz: zone };
        let after = near - TimeDelta::seconds(before_secs);
        let last = last_gap.map(|g| after - TimeDelta::seconds(g));
        if let Some(t) = hb.next_heartbeat(after, last) {
            prop_assert!(t >= after);
            prop_assert!(inside_window(&hb, t), "{hb:?} after {after} (last {last:?}) fires at {t} = {}", t.with_timezone(&zone));
        }
    }
}
