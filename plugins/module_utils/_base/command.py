# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way this collection runs a local command (scontrol, nvidia-smi): bounded in time and output.

Every command the collection runs goes through here: the modules' ``run``/``run_text``/
``run_checked``, the ``slurm_nodes`` event source's ``run_async`` (the same run on a worker thread).

``AnsibleModule.run_command`` has neither a timeout nor an output limit, and a plain
``subprocess.run(timeout=...)`` kills only the direct child: when that is a wrapper (``ssh ctl
scontrol``, a shell script) whose own child still holds the pipes, the read goes on after the kill.
Here the command runs in a session of its own; the deadline covers everything until both pipes are
closed, and on expiry (or on too much output) the whole process group is killed and reaped.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import CommandError, clip

DEFAULT_TIMEOUT = 60.0
# scontrol show nodes --json of 100,000 nodes is about 250 MB; anything beyond this is not a Slurm answer.
DEFAULT_MAX_OUTPUT = 512 * 1024 * 1024
_CHUNK = 1024 * 1024


def describe(argv):
    """The command as a message shows it: each word clipped, at most a few words."""
    words = [word if len(word) <= 120 else clip(word, 120) for word in map(str, argv[:6])]
    return " ".join(words) + (" ..." if len(argv) > 6 else "")


def run(argv, timeout=DEFAULT_TIMEOUT, max_output=DEFAULT_MAX_OUTPUT, env=None, started=None):
    """``(rc, stdout, stderr)`` of ``argv`` as bytes; CommandError when it cannot run, overruns
    ``timeout`` seconds (children holding its pipes included) or prints more than ``max_output`` bytes.

    ``started(process)``, when given, is called once the command runs; if it raises, the command's
    group is killed and the error goes on.
    """
    try:
        process = subprocess.Popen(  # pylint: disable=consider-using-with
            [str(word) for word in argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, env=env)
    except OSError as exc:
        raise CommandError(f"cannot run {describe(argv)}: {exc.strerror or exc}") from None
    try:
        if started:
            started(process)
        stdout, stderr = _collect(process, argv, timeout, max_output)
    except BaseException:
        _kill_group(process)
        raise
    return process.wait(), stdout, stderr


def _collect(process, argv, timeout, max_output):
    deadline = time.monotonic() + timeout
    chunks = {process.stdout: [], process.stderr: []}
    total = 0
    with selectors.DefaultSelector() as selector:
        for pipe in chunks:
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise CommandError(f"{describe(argv)} did not finish within {timeout:g} s; it was killed "
                                   "with every process it started")
            for key, _events in selector.select(left):
                data = os.read(key.fd, _CHUNK)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                total += len(data)
                if total > max_output:
                    raise CommandError(f"{describe(argv)} printed more than {max_output} bytes; it was killed")
                chunks[key.fileobj].append(data)
    for pipe in chunks:
        pipe.close()
    return b"".join(chunks[process.stdout]), b"".join(chunks[process.stderr])


def _signal_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(process):
    _signal_group(process)
    for pipe in (process.stdout, process.stderr):
        if pipe and not pipe.closed:
            pipe.close()
    process.wait()


async def run_async(argv, timeout=DEFAULT_TIMEOUT, max_output=DEFAULT_MAX_OUTPUT, env=None):
    """run() for an event loop: the same bounds, on a worker thread, so the loop goes on meanwhile.

    A caller cancelled while the command runs kills the command's whole group at once (the
    worker then reads the pipes' end and reaps it); cancelled before it started, it never starts.
    """
    import asyncio  # pylint: disable=import-outside-toplevel  # only the event sources need it, not the modules

    state = {"cancelled": False, "process": None}

    def started(process):
        state["process"] = process
        if state["cancelled"]:
            raise CommandError(f"{describe(argv)} was cancelled")

    work = asyncio.get_running_loop().run_in_executor(None, lambda: run(argv, timeout, max_output, env, started))
    try:
        return await work
    except asyncio.CancelledError:
        state["cancelled"] = True
        process = state["process"]
        if process is not None and process.returncode is None:  # not yet reaped: its group is still its own
            _signal_group(process)
        raise


def run_text(argv, timeout=DEFAULT_TIMEOUT, max_output=DEFAULT_MAX_OUTPUT, env=None):
    """Like run(), with stdout and stderr decoded as UTF-8; output that is not UTF-8 is a CommandError
    naming the byte offset (a tool's output is text; anything else is not its answer)."""
    rc, stdout, stderr = run(argv, timeout, max_output, env)
    try:
        out = stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{describe(argv)} printed output that is not UTF-8 (byte {exc.start})") from None
    return rc, out, stderr.decode("utf-8", errors="replace")


def run_checked(argv, timeout=DEFAULT_TIMEOUT, max_output=DEFAULT_MAX_OUTPUT, env=None):
    """stdout of ``argv`` as text; CommandError, with the start of its stderr, when it exits non-zero."""
    rc, out, err = run_text(argv, timeout, max_output, env)
    if rc != 0:
        said = (err or out).strip()
        said = said[:2000] + "..." if len(said) > 2000 else said
        raise CommandError(f"{describe(argv)} failed (exit {rc}): {said or 'no output'}")
    return out
