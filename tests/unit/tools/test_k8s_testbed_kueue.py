"""tools/k8s_testbed.py, Kueue: the webhook configurations registered, and the build stamp."""

from __future__ import annotations

import base64
import json

import k8s_testbed


def hook(name, group, resource, path):
    return {"name": name, "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
            "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": [resource]}],
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"]}


def test_only_kueue_and_job_webhooks_are_registered_at_the_loopback_url_with_the_ca(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"PEM")
    manifests = [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "mutating-webhook-configuration"},
         "webhooks": [hook("mjob.kb.io", "batch", "jobs", "/mutate-batch-v1-job"),
                      hook("mpod.kb.io", "", "pods", "/mutate--v1-pod"),
                      hook("mdeployment.kb.io", "apps", "deployments", "/mutate-apps-v1-deployment"),
                      hook("mworkload.kb.io", "kueue.x-k8s.io", "workloads", "/mutate-workload")]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "validating-webhook-configuration"},
         "webhooks": [hook("vpod.kb.io", "", "pods", "/validate--v1-pod")]},
    ]
    [mutating] = k8s_testbed.kueue_webhook_configurations(manifests, "https://127.0.0.1:9443", ca)
    assert mutating["metadata"] == {"name": "aifactory-testbed-kueue-mutating-webhook-configuration"}
    assert [h["name"] for h in mutating["webhooks"]] == ["mjob.kb.io", "mworkload.kb.io"]
    assert mutating["webhooks"][0]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/mutate-batch-v1-job", "caBundle": base64.b64encode(b"PEM").decode()}
    assert manifests[0]["webhooks"][0]["clientConfig"]["service"]  # the module's manifests are not changed


def test_kueue_build_is_reused_only_while_its_recipe_stamp_matches(tmp_path, monkeypatch):
    monkeypatch.setenv("AIFACTORY_CACHE", str(tmp_path))
    out = k8s_testbed.kueue_dir() / "bin"
    out.mkdir(parents=True)
    assert not k8s_testbed.kueue_is_built()
    (out / "kueue").write_text("#!/bin/sh\n")
    (out / "kueue").chmod(0o755)
    (out / "RECIPE").write_text(json.dumps({"recipe": "0", "kueue": k8s_testbed.KUEUE_VERSION}))
    assert not k8s_testbed.kueue_is_built()  # an older recipe rebuilds
    (out / "RECIPE").write_text(json.dumps({"recipe": k8s_testbed.KUEUE_RECIPE_VERSION,
                                            "kueue": k8s_testbed.KUEUE_VERSION}))
    assert k8s_testbed.kueue_is_built()
    assert k8s_testbed.build_kueue() == out / "kueue"  # no Go needed when cached
