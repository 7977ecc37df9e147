# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper callback: records each task's wall time (like ansible.posix.profile_tasks).

Enabled only by bench/run.py (ANSIBLE_CALLBACKS_ENABLED=bench_timer); writes a JSON list of
{task, seconds, status, changed} to the file named by BENCH_TIMER_OUT when the playbook ends.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: bench_timer
type: aggregate
short_description: Write per-task wall times to a JSON file (benchmark use only)
description:
  - Used by C(bench/run.py). Writes the tasks' wall times to the file named by E(BENCH_TIMER_OUT).
requirements:
  - enabled with C(callbacks_enabled)
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._started = {}
        self._records = []

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._started[task._uuid] = (task.get_name(), time.perf_counter())

    def _finish(self, result, status):
        task = getattr(result, "task", None) or result._task
        payload = getattr(result, "result", None)
        if not isinstance(payload, dict):
            payload = result._result
        name, started = self._started.get(task._uuid, (task.get_name(), None))
        self._records.append({
            "task": name,
            "seconds": None if started is None else time.perf_counter() - started,
            "status": status,
            "changed": bool(payload.get("changed")),
            "msg": payload.get("msg") if status != "ok" else None,
        })

    def v2_runner_on_ok(self, result):
        self._finish(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._finish(result, "failed")

    def v2_runner_on_unreachable(self, result):
        self._finish(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("BENCH_TIMER_OUT")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(self._records, handle)
