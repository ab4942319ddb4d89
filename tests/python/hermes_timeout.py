"""The Hermes plugin against a `vwf` that never answers: every call stops within its time limit.

Usage: python3 hermes_timeout.py VWF_BIN PLUGIN_DIR WORK_DIR

Needs only the standard library (the plugin is loaded from its file, without Hermes). Fake `vwf`
binaries are shell scripts in WORK_DIR, named to the plugin by VWF_BIN:
- `hung`: starts a child that holds the output pipes, then waits forever;
- `stubborn`: the same, ignoring SIGTERM (the plugin must follow up with SIGKILL);
- `slow`: answers after one second (a run within its longer limit is not stopped).
Every tool, the `/workflow` command and the schedule helper are called through each; each call
must answer `{ok:false, error}` naming its limit and the variable that sets it, within that
limit plus the stop's grace, and leave no process of the call alive. Then the real binary
answers with the default limits. Asserts as it goes; prints one JSON report on standard output
(crates/vwf/tests/mcp.rs checks it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

VWF, PLUGIN_DIR, WORK = sys.argv[1:4]
WORK_DIR = Path(WORK)
PIDS = WORK_DIR / "pids"
CALL_LIMIT, RUN_LIMIT = 0.3, 0.6
# What a stop may add to the limit: SIGTERM's grace (SIGKILL after it), and a slow machine.
SLACK = 10.0


def load_plugin():
    # Loaded as a package, as Hermes loads a plugin folder (it imports a sibling module).
    spec = importlib.util.spec_from_file_location(
        "vwf_hermes_plugin", Path(PLUGIN_DIR) / "__init__.py", submodule_search_locations=[PLUGIN_DIR]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def fake(name: str, body: str) -> str:
    path = WORK_DIR / name
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


HUNG = fake("hung", f'sleep 600 &\necho $! >> "{PIDS}"\necho $$ >> "{PIDS}"\nwait\n')
STUBBORN = fake("stubborn", f'trap "" TERM\nsleep 600 &\necho $! >> "{PIDS}"\necho $$ >> "{PIDS}"\nwait\n')
SLOW = fake("slow", 'sleep 1\necho \'{"ok": true, "slow": true}\'\n')


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie waiting to be reaped does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return state != "Z"


def assert_all_stopped() -> int:
    """Every process the fakes started is gone (polled with a deadline: they are real processes)."""
    pids = [int(p) for p in PIDS.read_text().split()] if PIDS.exists() else []
    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, f"still running after the stop: {[p for p in pids if alive(p)]}"
        time.sleep(0.05)
    PIDS.unlink(missing_ok=True)
    return len(pids)


def timed(call, seconds: float):
    """`call()` and how long it took; a call still going after `seconds` fails the test (a
    plugin without time limits hangs here)."""

    def overdue(*_):
        raise AssertionError(f"no answer after {seconds:.0f} s")

    signal.signal(signal.SIGALRM, overdue)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        answer = call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return answer, time.monotonic() - start


def main() -> None:
    plugin = load_plugin()
    report = {"limits": {}, "calls": [], "stopped_processes": 0}

    # The limits: a positive number of seconds from the environment, else the default.
    for raw, want in [("", 60.0), ("abc", 60.0), ("-1", 60.0), ("0", 60.0), ("nan", 60.0), ("inf", 60.0),
                      ("2.5", 2.5), (" 7 ", 7.0)]:
        os.environ["VWF_CALL_TIMEOUT_SECONDS"] = raw
        got = plugin.time_limit(plugin.CALL_TIMEOUT)
        assert got == want, f"VWF_CALL_TIMEOUT_SECONDS={raw!r}: {got}"
        report["limits"][raw] = got
    os.environ.pop("VWF_RUN_TIMEOUT_SECONDS", None)
    # A run's default never cuts a legitimate run short: 50 steps of up to an hour, tried 4 times.
    assert plugin.time_limit(plugin.RUN_TIMEOUT) == 50 * 3600 * 4.0
    report["run_default"] = plugin.time_limit(plugin.RUN_TIMEOUT)

    os.environ["VWF_CALL_TIMEOUT_SECONDS"] = str(CALL_LIMIT)
    os.environ["VWF_RUN_TIMEOUT_SECONDS"] = str(RUN_LIMIT)
    never = lambda tool, args: (_ for _ in ()).throw(AssertionError(f"dispatch called: {tool}"))  # noqa: E731
    calls = [(f"tool {t}", lambda t=t: json.loads(plugin.call_tool(t, {"name": "x"})), t in plugin.RUN_TOOLS)
             for t in ["workflow_design_save", "workflow_design_load", "workflow_design_validate",
                       "workflow_design_run", "workflow_design_respond"]]
    calls += [(f"/workflow {a}", lambda a=a: plugin.workflow_command(a), a.split()[0] in plugin.RUN_WORDS)
              for a in ["list", "validate x", "open x", "run x", "run retry 0123456789ab", "approve r g yes"]]
    calls.append(("schedule", lambda: plugin.schedule("x", "daily", time="09:00", dispatch=never), False))

    # Every call through the hung binary; a short and a long one through the stubborn one (each
    # of those waits out SIGTERM's grace).
    stubborn = [c for c in calls if c[0] in ("tool workflow_design_validate", "/workflow run x")]
    for binary, cases in ((HUNG, calls), (STUBBORN, stubborn)):
        os.environ["VWF_BIN"] = binary
        for what, call, long in cases:
            limit = RUN_LIMIT if long else CALL_LIMIT
            answer, took = timed(call, limit + SLACK)
            var = "VWF_RUN_TIMEOUT_SECONDS" if long else "VWF_CALL_TIMEOUT_SECONDS"
            text = answer if isinstance(answer, str) else answer.get("error", "")
            if not isinstance(answer, str):
                assert answer.get("ok") is False and set(answer) == {"ok", "error"}, f"{what}: {answer}"
            else:
                assert text.startswith("/workflow failed: "), f"{what}: {text}"
            assert f"did not answer within {limit:g} s and was stopped (set {var} to allow longer)" in text, f"{what}: {text}"
            assert limit <= took < limit + SLACK, f"{what}: answered after {took:.2f} s (limit {limit} s)"
            report["stopped_processes"] += assert_all_stopped()
            report["calls"].append({"binary": Path(binary).name, "call": what, "limit": limit, "seconds": round(took, 2)})

    # A call within its limit is not stopped: a run gets the longer one.
    os.environ["VWF_BIN"] = SLOW
    os.environ["VWF_RUN_TIMEOUT_SECONDS"] = "30"
    answer = json.loads(timed(lambda: plugin.call_tool("workflow_design_run", {"name": "x"}), SLACK)[0])
    assert answer == {"ok": True, "slow": True}, answer
    answer = json.loads(timed(lambda: plugin.call_tool("workflow_design_validate", {"name": "x"}), SLACK)[0])
    assert "did not answer within 0.3 s" in answer["error"], answer
    report["slow_run_answered"] = True

    # The real binary, with the default limits.
    for var in ("VWF_CALL_TIMEOUT_SECONDS", "VWF_RUN_TIMEOUT_SECONDS"):
        os.environ.pop(var)
    os.environ["VWF_BIN"] = VWF
    os.environ["VWF_HOME"] = str(WORK_DIR / "home")
    graph = {"nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "out", "type": "output"}],
             "edges": [{"from": "start", "to": "out"}]}
    saved = json.loads(plugin.call_tool("workflow_design_save", {"name": "hello", "graph": graph}))
    assert saved.get("ok") is True, saved
    ran = json.loads(plugin.call_tool("workflow_design_run", {"name": "hello"}))
    assert ran.get("status") == "done", ran
    assert "hello" in plugin.workflow_command("list")
    report["real_binary"] = ran["status"]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
