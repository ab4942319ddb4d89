"""visual-workflow for Hermes: a thin plugin over the ``vwf`` binary.

``register(ctx)`` gives Hermes the five agent tools (``workflow_design_*``), a tool for every
saved design marked ``"tool": true`` (``vwf tools`` lists them), and the ``/workflow`` command. Every call runs ``vwf tool NAME -`` (the arguments as JSON on standard input) or
``vwf slash TEXT`` and hands back what the binary printed; validation, names, runs and prompts
are all decided there, never here. The binary is ``$VWF_BIN``, else the one the
``visual-workflow`` wheel installed into this Python environment, else ``vwf`` on ``PATH``; its
home is the same as Hermes's (``$VWF_HOME``, else ``$HERMES_HOME``, else ``~/.hermes``).

Hermes loads this one source either way: as the ``vwf_hermes`` package of the wheel (entry point
``hermes_agent.plugins``: ``visual-workflow``), or as a folder copied into its plugins directory.

Every call has a time limit, so a hung ``vwf`` never holds a Hermes turn forever: calls that
run a workflow (``workflow_design_run``, ``workflow_design_respond``, ``/workflow run`` and
``/workflow approve``, which can perform agent steps) get ``$VWF_RUN_TIMEOUT_SECONDS`` (default
720000, the longest a run without loops can legitimately take), every other call ``$VWF_CALL_TIMEOUT_SECONDS`` (default 60). A call over its limit is
stopped (its whole process group) and answers ``{ok:false, error}`` saying so.

``schedule(design, ...)`` makes a Hermes cron job for a design: ``vwf schedule set`` records the
schedule (paused, so only Hermes fires it) and builds the job's cron expression, name, prompt and
delivery target (the Hermes targets its output nodes name); the host's cron tool creates the job
from exactly those.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, Callable, Optional

from ._find_vwf import VwfNotFound, find_vwf_bin

TOOLSET = "visual-workflow"

# The tools' schemas, in the host's {name, description, parameters} form. A test checks that
# they match what `vwf mcp` lists.
TOOL_SCHEMAS = json.loads((Path(__file__).with_name("tools.json")).read_text(encoding="utf-8"))

# Hermes's cron tool is `cronjob` (hermes-agent 0.19); `cronjob_manage` is the older name.
CRON_TOOLS = ("cronjob", "cronjob_manage")

# Time limits of a call to vwf, in seconds: (environment variable, default). A run can wait on
# agent steps; its default is the longest a run without loops can legitimately take (vwf's limits:
# at most 50 steps, each up to 3600 s per attempt, an agent step tried up to 4 times), so only a
# hung vwf is stopped. A loop over many agent steps can take longer: raise the variable for it.
# The other calls read or write a few files.
RUN_LIMIT_STEPS, RUN_LIMIT_STEP_SECONDS, RUN_LIMIT_ATTEMPTS = 50, 3600, 4
RUN_TIMEOUT = ("VWF_RUN_TIMEOUT_SECONDS", float(RUN_LIMIT_STEPS * RUN_LIMIT_STEP_SECONDS * RUN_LIMIT_ATTEMPTS))
CALL_TIMEOUT = ("VWF_CALL_TIMEOUT_SECONDS", 60.0)
# The tools and /workflow words that advance a run.
RUN_TOOLS = ("workflow_design_run", "workflow_design_respond")
RUN_WORDS = ("run", "approve")
# After SIGTERM, how long a stopped call may take to exit before SIGKILL.
STOP_GRACE_SECONDS = 2.0

_ctx = None


def vwf_binary() -> str:
    """``$VWF_BIN``, else the environment's own ``vwf`` (see ``_find_vwf``), else ``vwf`` found
    on ``PATH`` (the bare name when it is not there either)."""
    if os.environ.get("VWF_BIN"):
        return os.environ["VWF_BIN"]
    try:
        return find_vwf_bin()
    except VwfNotFound:
        return shutil.which("vwf") or "vwf"


def _failure(message: str) -> dict:
    return {"ok": False, "error": message}


def time_limit(limit: tuple) -> float:
    """Seconds from the limit's environment variable, else its default (also for a value that
    is not a positive number)."""
    name, default = limit
    try:
        seconds = float(os.environ.get(name, "").strip())
    except ValueError:
        return default
    return seconds if math.isfinite(seconds) and seconds > 0 else default


def _stop(proc: subprocess.Popen) -> None:
    """Stops a call and everything it started: SIGTERM to its process group, SIGKILL after a
    grace period, then collects what is left of its output."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_SECONDS), (getattr(signal, "SIGKILL", signal.SIGTERM), 5.0)):
        try:
            if hasattr(os, "killpg"):
                os.killpg(proc.pid, sig)
            else:
                proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.communicate(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
    # A process that left the group still holds the pipes: stop reading them.
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _run(args: list, stdin: Optional[str] = None, limit: tuple = CALL_TIMEOUT) -> dict:
    """Runs ``vwf ARGS`` and parses the JSON it printed; any trouble (a time limit passed
    included) is an ``{ok:false, error}``."""
    binary = vwf_binary()
    seconds = time_limit(limit)
    try:
        proc = subprocess.Popen(
            [binary, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            start_new_session=True,  # its own process group, so a stop reaches its children
        )
    except OSError as exc:
        return _failure(f"cannot run {binary}: {exc} (set VWF_BIN to the vwf binary)")
    call = " ".join(a for a in args[:3] if not a.startswith("-"))[:100]  # "tool workflow_design_run"
    try:
        stdout, stderr = proc.communicate(input=stdin if stdin is not None else "", timeout=seconds)
    except subprocess.TimeoutExpired:
        _stop(proc)
        return _failure(
            f"{binary} {call} did not answer within {seconds:g} s and was stopped "
            f"(set {limit[0]} to allow longer)"
        )
    try:
        body = json.loads(stdout)
    except ValueError:
        detail = (stderr or stdout).strip()[-2000:]
        return _failure(f"{binary} {call} exited with {proc.returncode}: {detail or 'no output'}")
    return body if isinstance(body, dict) else _failure(f"{binary} answered {stdout[:200]!r}")


def call_tool(name: str, args: Any) -> str:
    """One agent tool: the contract JSON as text (the form Hermes tool handlers return)."""
    try:
        payload = json.dumps(args if args is not None else {})
    except (TypeError, ValueError) as exc:
        return json.dumps(_failure(f"arguments are not JSON: {exc}"))
    # A saved design's own tool runs the design: it gets a run's time limit too.
    static = {schema["name"] for schema in TOOL_SCHEMAS}
    limit = RUN_TIMEOUT if name in RUN_TOOLS or name not in static else CALL_TIMEOUT
    return json.dumps(_run(["tool", name, "-"], stdin=payload, limit=limit))


def _tool_handler(name: str) -> Callable[..., str]:
    def handler(args: Any = None, **_kwargs: Any) -> str:
        return call_tool(name, args)

    handler.__name__ = f"{name}_handler"
    return handler


def workflow_command(raw_args: str = "") -> str:
    """``/workflow ...``: the reply text of ``vwf slash``."""
    text = f"/workflow {raw_args or ''}".strip()
    words = text.split()
    limit = RUN_TIMEOUT if len(words) > 1 and words[1].lower() in RUN_WORDS else CALL_TIMEOUT
    body = _run(["--json", "slash", text], limit=limit)
    return body.get("reply") or f"/workflow failed: {body.get('error', 'no reply')}"


def schedule(
    design: str,
    preset: str,
    time: Optional[str] = None,
    minute: Optional[int] = None,
    dow: Optional[int] = None,
    cron: Optional[str] = None,
    tz: Optional[str] = None,
    dispatch: Optional[Callable[[str, dict], Any]] = None,
) -> dict:
    """Creates the Hermes cron job ``workflow:<design>`` for a schedule.

    ``vwf schedule set`` checks the name and the schedule and answers the job (``job.cron``,
    ``job.name``, ``job.prompt``, ``job.deliver``); it is recorded paused, so the Hermes cron job is
    the only thing that fires it. When the design's output nodes name Hermes targets
    (``job.deliver``, e.g. ``telegram:-100123:17585``), the cron job delivers its result there
    through Hermes's gateway; otherwise Hermes's default applies (the chat it was created from). ``dispatch(tool, args)`` calls a host tool (default: the registered plugin
    context's ``dispatch_tool``). Answers ``{ok:true, job, cron_job}`` or ``{ok:false, error}``.
    Hermes evaluates the cron expression in its own time zone (``timezone`` in config.yaml):
    pass the same ``tz`` so ``vwf`` reports the same next run.
    """
    if dispatch is None:
        if _ctx is None:
            return _failure("the visual-workflow plugin is not registered with a Hermes context")
        dispatch = _ctx.dispatch_tool
    args = ["--json", "schedule", "set", "--preset", str(preset), "--paused"]
    for flag, value in (("--time", time), ("--minute", minute), ("--dow", dow), ("--cron", cron), ("--tz", tz)):
        if value is not None:
            args += [flag, str(value)]
    args += ["--", str(design)]  # whatever the name holds, it stays one argument: vwf judges it
    answer = _run(args)
    if answer.get("ok") is not True:
        return answer
    job = answer["job"]
    request = {"action": "create", "name": job["name"], "schedule": job["cron"], "prompt": job["prompt"]}
    if job.get("deliver"):
        request["deliver"] = job["deliver"]
    created = None
    for tool in CRON_TOOLS:
        raw = dispatch(tool, dict(request))
        try:
            created = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            created = {"success": False, "error": str(raw)}
        if not (isinstance(created, dict) and str(created.get("error", "")).startswith("Unknown tool")):
            break
    if not (isinstance(created, dict) and created.get("success")):
        error = created.get("error") if isinstance(created, dict) else created
        return {"ok": False, "error": f"Hermes did not create the cron job: {error}", "job": job}
    return {"ok": True, "job": job, "cron_job": created}


def design_tools() -> list:
    """The saved designs offered as tools (``"tool": true``), each ``{name, description,
    parameters, design}`` as ``vwf tools`` answers them; none when ``vwf`` cannot say."""
    body = _run(["--json", "tools"])
    tools = body.get("tools") if body.get("ok") is True else None
    return [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)] if isinstance(tools, list) else []


def register(ctx) -> None:
    """Hermes plugin entry point: the five tools, one tool per saved design marked ``"tool":
    true`` (its ``inputs`` its parameters; calling it runs the design), and the ``/workflow``
    command."""
    global _ctx
    _ctx = ctx
    designs = [
        {"name": t["name"], "description": t.get("description", ""), "parameters": t.get("parameters") or {"type": "object", "properties": {}}}
        for t in design_tools()
    ]
    for schema in [*TOOL_SCHEMAS, *designs]:
        ctx.register_tool(
            name=schema["name"],
            toolset=TOOLSET,
            schema=schema,
            handler=_tool_handler(schema["name"]),
            description=schema["description"],
            emoji="🧩",
        )
    ctx.register_command(
        "workflow",
        handler=workflow_command,
        description="Design and run visual workflows (list, new, open, save, validate, run, approve).",
        args_hint="list | run <name> | approve <run> <gate> <answer>",
    )
