"""tools/k8s_testbed.py: Kueue's webhook configurations, the build stamp, and the one go build of the five binaries."""

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


def test_the_test_bed_is_reused_only_while_its_recipe_stamp_matches(tmp_path, monkeypatch):
    monkeypatch.setenv("AIFACTORY_CACHE", str(tmp_path))
    out = k8s_testbed.bin_dir()
    out.mkdir(parents=True)
    for binary in k8s_testbed.BINARIES:
        (out / binary).write_text("#!/bin/sh\n")
        (out / binary).chmod(0o755)
    stamp = {"recipe": k8s_testbed.RECIPE_VERSION, "kubernetes": k8s_testbed.K8S_VERSION,
             "etcd": k8s_testbed.ETCD_VERSION, "kueue": k8s_testbed.KUEUE_VERSION, "nfd": k8s_testbed.NFD_VERSION}
    (out / "RECIPE").write_text(json.dumps({**stamp, "recipe": "1"}))
    assert not k8s_testbed.is_built()  # an older recipe (Kueue built apart) rebuilds
    (out / "RECIPE").write_text(json.dumps({**stamp, "kueue": "v0.0.1"}))
    assert not k8s_testbed.is_built()  # another Kueue version rebuilds
    (out / "RECIPE").write_text(json.dumps({**stamp, "nfd": "v0.18.3"}))
    assert not k8s_testbed.is_built()  # another NFD version (nfd-master and its CRDs) rebuilds
    (out / "RECIPE").write_text(json.dumps(stamp))
    assert k8s_testbed.is_built()
    assert k8s_testbed.build() == out  # no Go needed when cached
    (out / "kueue").unlink()
    assert not k8s_testbed.is_built()  # every one of the five binaries must be there
    (out / "kueue").write_text("#!/bin/sh\n")
    (out / "kueue").chmod(0o755)
    (out / "nfd-master").unlink()
    assert not k8s_testbed.is_built()


def test_one_go_build_compiles_the_five_binaries_in_one_wrapper_module(tmp_path, monkeypatch):
    calls = []
    k8s_go_mod = tmp_path / "k8s.go.mod"
    k8s_go_mod.write_text("replace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n"
                          "\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n)\n")

    def go_mod_download(module, version):
        return {"GoMod": str(k8s_go_mod), "Origin": {"Hash": "abc123"}}

    monkeypatch.setattr(k8s_testbed, "_go", lambda args, cwd, env=None: calls.append((args, cwd)) or "")
    monkeypatch.setattr(k8s_testbed, "go_mod_download", go_mod_download)
    src, out = tmp_path / "src", tmp_path / "out"
    k8s_testbed._build_all("v1.36.3", src, out)  # pylint: disable=protected-access

    assert all(cwd == src for _args, cwd in calls)  # one module
    # The staging modules, and NFD's nested api/nfd module (its go.mod's ./api/nfd, left out of the module zip).
    nfd_api = "sigs.k8s.io/node-feature-discovery/api/nfd"
    assert ["mod", "edit", "-replace=k8s.io/api=k8s.io/api@v0.36.3",
            "-replace=k8s.io/client-go=k8s.io/client-go@v0.36.3",
            f"-replace={nfd_api}={nfd_api}@{k8s_testbed.NFD_VERSION}"] in [args for args, _cwd in calls]
    assert any(args[:2] == ["get", "-tool"] and
               f"sigs.k8s.io/node-feature-discovery/cmd/nfd-master@{k8s_testbed.NFD_VERSION}" in args
               for args, _cwd in calls)
    builds = [args for args, _cwd in calls if args[0] == "build"]
    assert len(builds) == 1
    assert builds[0][-5:] == ["k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-scheduler",
                              "sigs.k8s.io/kueue/cmd/kueue", "sigs.k8s.io/node-feature-discovery/cmd/nfd-master",
                              "./etcd"]
    ldflags = builds[0][builds[0].index("-ldflags") + 1]
    assert "-X sigs.k8s.io/kueue/pkg/version.GitCommit=abc123" in ldflags
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.3" in ldflags
    assert f"-X sigs.k8s.io/node-feature-discovery/pkg/version.version={k8s_testbed.NFD_VERSION}" in ldflags
    assert "etcdmain.Main(os.Args)" in (src / "etcd" / "main.go").read_text()
    # go mod tidy runs after every module has joined, before the build.
    order = [args[:2] for args, _cwd in calls]
    assert order.index(["mod", "tidy"]) > max(i for i, args in enumerate(order) if args[0] == "get")
    assert order.index(["mod", "tidy"]) < order.index(builds[0][:2])
