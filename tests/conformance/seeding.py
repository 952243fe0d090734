"""What each ETSI suite needs before it runs, and what single tests need before they start.

The suites name their resources through variables (`vnfInstanceId`, `vnfLcmOpOccId`, ...)
with placeholder values. For every suite file the orchestrator calls `suite_variables()`,
which creates fresh resources in the state the suite's pre-conditions describe and returns
the variable overrides; the Robot listener (`preconditions.py`) calls `before_test()` for the
few tests whose documented pre-condition differs from their suite's (a paged list needs more
than one page of items, a PATCH conflict needs an operation in progress, ...).

Faults: `TEST.NOOP.V_1` honours `additionalParams.testVim` (`failures`, `rollbackFailures`,
`delaySeconds`), which is how `FAILED_TEMP`, `PROCESSING` and failing rollbacks are reached
through the public API (see docs/conformance.md).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

from vnfm_client import MOVING, SeedError, Vnfm, build_package, not_existing

# The vnfdId of tests/conformance/package (the id the suites' createVnfRequest.json uses).
VNFD_ID = "6fc3539c-e602-4afa-8e13-962fb5a7d81f"
# The vnfdId of tests/conformance/package-single (a VNFD in one file).
SINGLE_VNFD_ID = "0b2d3c54-8f1e-4a5f-9c1d-5f6e7a8b9c01"
# The external connection point and internal virtual link of its flavours, which the
# suites' request bodies name "string" (replaced in the work copy, see conformance.PATCHES).
EXT_CPD_ID = "web_cp"
INTERNAL_VLD_ID = "internal_net"
SCALE_OUT = {"type": "SCALE_OUT", "aspectId": "myAspect"}
LCM = "VNFLifecycleManagement-API"
PKGM = "VNFPackageManagement-API"
FM = "VNFFaultManagement-API"
IND = "VNFIndicator-API"
PM = "VNFPerformanceManagement-API"
# SOL002 (v2.6.1) suites of the interfaces a VNFM offers the EM: the same resources as their
# SOL003 twins (alarms, PM jobs and thresholds, indicators), seeded the same way; their
# results are named `SOL002/<API>/<suite>`.
SOL002_FM = "SOL002/VNFFaultManagement-API"
SOL002_PM = "SOL002/VNFPerformanceManagement-API"
SOL003_TWIN = {SOL002_FM: FM, SOL002_PM: PM}
# The metric the seeded PM jobs and thresholds measure, and the PromQL the server is given for
# it (conformance.start_server): a value sweeping 0..100 every 4 seconds, so that reports have
# values and a threshold at 40 is crossed up and down within seconds.
PM_METRIC = "VCpuUsageMeanVnf"
PM_PROMQL = "vector((time() % 4) * 25)"
# The vnfdId of tests/conformance/package-indicators and the indicator its VNFD declares.
INDICATOR_VNFD_ID = "0b2d3c54-8f1e-4a5f-9c1d-5f6e7a8b9c02"
INDICATOR_ID = "conformance_load"
# Long enough to outlast any test that needs an operation in progress; cancelling ends it.
SLOW_SECONDS = 600


class Ctx:
    """Shared state of one conformance run (also rebuilt inside the Robot listener)."""

    def __init__(self, state: dict):
        self.state = state
        self.vnfm = Vnfm(state["base"], state["token"])
        self.stub = state["stub"]
        self.subscriptions: list[str] = []
        # Resources (paths) to delete after the suite, e.g. PM jobs that keep reporting.
        self.deletions: list[str] = []

    @classmethod
    def load(cls, path):
        return cls(json.loads(Path(path).read_text()))

    # ----- resources -----

    def not_instantiated(self, name="conformance"):
        return self.vnfm.create_instance(VNFD_ID, name)

    def instantiated(self, name="conformance"):
        inst = self.not_instantiated(name)
        occ = self.vnfm.wait(self.vnfm.instantiate(inst))
        if occ["operationState"] != "COMPLETED":
            raise SeedError(f"instantiation of {inst} ended {occ['operationState']}: {occ.get('error')}")
        return inst

    def completed_op(self):
        """(instance, op-occ) of an instantiation that completed."""
        inst = self.not_instantiated()
        op = self.vnfm.instantiate(inst)
        self.vnfm.wait(op, {"COMPLETED"})
        return inst, op

    def failed_temp_op(self, failures=1, rollback_failures=0):
        """(instance, op-occ) of a scale-out that failed and waits in FAILED_TEMP. `failures`
        driver calls fail, so a retry after them succeeds; `rollback_failures` makes the
        rollback fail as often."""
        inst = self.instantiated()
        params = {"testVim": {"failures": failures, "rollbackFailures": rollback_failures}}
        op = self.vnfm.task(inst, "scale", dict(SCALE_OUT, additionalParams=params))
        occ = self.vnfm.wait(op)
        if occ["operationState"] != "FAILED_TEMP":
            raise SeedError(f"the scale meant to fail ended {occ['operationState']}")
        return inst, op

    def processing_op(self, inst=None):
        """(instance, op-occ) of a scale-out that stays PROCESSING for SLOW_SECONDS."""
        inst = inst or self.instantiated()
        params = {"testVim": {"delaySeconds": SLOW_SECONDS}}
        op = self.vnfm.task(inst, "scale", dict(SCALE_OUT, additionalParams=params))
        self.vnfm.wait(op, {"PROCESSING"})
        return inst, op

    def subscribe(self, instance=None, path="/endpoint"):
        """A subscription whose notifications go to the MockServer stub (`path`), limited to
        `instance` when given so other suites' traffic does not reach it."""
        filter_ = None
        if instance:
            filter_ = {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [instance]}}
        sub = self.vnfm.subscribe(self.stub + path, filter_)
        self.subscriptions.append(sub)
        return sub

    def teardown(self):
        """Ends what a suite left behind that could disturb the next one: subscriptions (they
        would send it notifications) and operations still in progress (they hold locks)."""
        for sub in self.subscriptions:
            self.vnfm.unsubscribe(sub)
        self.subscriptions.clear()
        for path in self.deletions:
            self.vnfm.call("DELETE", path)
        self.deletions.clear()
        r = self.vnfm.call("GET", "/vnflcm/v1/vnf_lcm_op_occs?filter=(in,operationState,STARTING,PROCESSING,ROLLING_BACK)")
        if r.status == 200:
            for occ in r.json():
                self.vnfm.call("POST", f"/vnflcm/v1/vnf_lcm_op_occs/{occ['id']}/cancel", {"cancelMode": "FORCEFUL"})


def base_variables(ctx: Ctx, api: str) -> dict:
    """Host, port, scheme, API root, credentials and short timings for every suite of `api`."""
    api = SOL003_TWIN.get(api, api)
    host, port = ctx.state["host"], ctx.state["port"]
    stub_port = ctx.state["stub_port"]
    v = {
        "apiRoot": "",
        "AUTHORIZATION": f"Bearer {ctx.state['token']}",
        "AUTH_USAGE": "1",
        "callback_uri": "http://127.0.0.1",
        "callback_port": str(stub_port),
        "sleep_interval": "1s",
        "total_polling_time": "10 sec",
        "polling_interval": "1 sec",
    }
    if api == LCM:
        # The server runs with --allow-duplicate-lcm-subscriptions (conformance.start_server).
        v.update({"VNFM_HOST": host, "VNFM_PORT": str(port), "VNFM_SCHEMA": "http", "VNFM_DUPLICATION": "1"})
    elif api == FM:
        # A second FM subscription with the same callback and filter is answered 303.
        v.update({"VNFM_HOST": host, "VNFM_PORT": str(port), "VNFM_SCHEMA": "http", "VNFM_DUPLICATION": "0"})
    elif api == PM:
        # A second PM subscription with the same callback and filter is answered 303.
        v.update(
            {
                "VNFM_HOST": host,
                "VNFM_PORT": str(port),
                "VNFM_SCHEMA": "http",
                "VNFM_ALLOWS_DUPLICATE_SUBS": "0",
                "VNFM_CHECKS_NOTIF_ENDPOINT": "1",
            }
        )
    elif api == IND:
        # A second indicator subscription with the same callback and filter is answered 303.
        v.update(
            {
                "VNFM_HOST": host,
                "VNFM_PORT": str(port),
                "VNFM_SCHEMA": "http",
                "VNFM_ALLOWS_DUPLICATE_SUBS": "0",
                "VNFM_CHECKS_NOTIF_ENDPOINT": "1",
            }
        )
    else:
        v.update({"NFVO_HOST": host, "NFVO_PORT": str(port), "NFVO_SCHEMA": "http"})
    return v


def suite_variables(ctx: Ctx, api: str, suite: str) -> dict:
    """Seeds what `suite` (a file name without `.robot`) of `api` expects; returns the variable
    overrides naming the seeded resources."""
    v = base_variables(ctx, api)
    api = SOL003_TWIN.get(api, api)
    missing = not_existing()
    v.update(
        {
            "notExistingVnfInstanceId": missing,
            "notExistingVnfLcmOpOccId": not_existing(),
            "vnfPkgId_processing": ctx.state.get("created_package", missing),
        }
    )
    if api in (LCM, FM) and suite in FIELDS:
        v["fields"] = FIELDS[suite]
    seed = {LCM: LCM_SUITES, PKGM: PKGM_SUITES, FM: FM_SUITES, IND: IND_SUITES, PM: PM_SUITES}[api].get(suite)
    if seed:
        v.update(seed(ctx))
    return v


# The `fields` value of the attribute-selector tests (`fields=${fields}`,
# `exclude_fields=${fields}`), per suite: attributes of the resource the suite lists. The
# suites' own default, `criteria,objectInstanceIds`, names attributes of the PM job (copied
# from the performance-management suites), which a VNF instance, an operation occurrence or a
# subscription does not have. Optional attributes, so that excluding them leaves a valid
# resource.
FIELDS = {
    "Alarms": "faultDetails,correlatedAlarmIds",
    "VNFInstances": "vnfInstanceName,vnfInstanceDescription",
    "VnfLcmOperationOccurences": "operationParams,error",
    "Subscriptions": "filter",
}


# ----- VNF lifecycle management (SOL003 clause 5) -----


def _instance_tasks(ctx):
    """Task suites and IndividualVNFInstance: the task (or PATCH) on an INSTANTIATED instance,
    conflicts on a NOT_INSTANTIATED one, DELETE conflicts on another INSTANTIATED one."""
    return {
        "vnfInstanceId": ctx.instantiated(),
        "instantiatedVnfInstanceId": ctx.instantiated(),
        "notInstantiatedVnfInstanceId": ctx.not_instantiated(),
    }


def _instantiate_task(ctx):
    return {
        "vnfInstanceId": ctx.not_instantiated(),
        "instantiatedVnfInstanceId": ctx.instantiated(),
        "notInstantiatedVnfInstanceId": ctx.not_instantiated(),
    }


def _op_occs(ctx):
    inst, op = ctx.completed_op()
    return {"vnfInstanceId": inst, "vnfLcmOpOccId": op}


def _failed_temp_task(ctx):
    inst, op = ctx.failed_temp_op()
    _, done = ctx.completed_op()
    return {"vnfInstanceId": inst, "vnfLcmOpOccId": op, "vnfLcmOpOccIdNotFailedTemp": done}


def _cancel_task(ctx):
    inst, op = ctx.processing_op()
    _, done = ctx.completed_op()
    return {
        "vnfInstanceId": inst,
        "vnfLcmOpOccId": op,
        "vnfLcmOpOccIdNotStartingProcessingRollingback": done,
    }


def _subscriptions(ctx):
    inst = ctx.not_instantiated()
    return {"subscriptionId": ctx.subscribe(inst, "/notification"), "vnfInstanceId": inst}


def _workflow_on(state):
    def seed(ctx):
        inst = ctx.instantiated() if state == "INSTANTIATED" else ctx.not_instantiated()
        ctx.subscribe(inst)
        return {"vnfInstanceId": inst}

    return seed


def _create_workflow(ctx):
    # The created instance's id is not known in advance: the subscription takes every
    # instance's notifications for the length of this suite.
    ctx.subscribe(None)
    return {"vnfInstanceId": ctx.not_instantiated()}


def _failed_temp_workflow(failures, rollback_failures=0):
    def seed(ctx):
        inst, op = ctx.failed_temp_op(failures, rollback_failures)
        ctx.subscribe(inst)
        return {"vnfInstanceId": inst, "vnfLcmOpOccId": op}

    return seed


def _cancel_workflow(ctx):
    inst, op = ctx.processing_op()
    ctx.subscribe(inst)
    return {"vnfInstanceId": inst, "vnfLcmOpOccId": op}


def _notification_endpoint(ctx):
    ctx.subscribe(None)
    return {"vnfInstanceId": ctx.not_instantiated()}


LCM_SUITES = {
    "VNFInstances": lambda ctx: {"vnfInstanceId": ctx.instantiated()},
    "IndividualVNFInstance": _instance_tasks,
    "InstantiateVNFTask": _instantiate_task,
    "ScaleVNFTask": _instance_tasks,
    "ScaleVNFToLevelTask": _instance_tasks,
    "ChangeVNFFlavourTask": _instance_tasks,
    "TerminateVNFTask": _instance_tasks,
    "HealVNFTask": _instance_tasks,
    "OperateVNFTask": _instance_tasks,
    "ChangeExternalVNFConnectivityTask": _instance_tasks,
    "VnfLcmOperationOccurences": _op_occs,
    "IndividualVnfLcmOperationOccurence": _op_occs,
    "RetryOperationTask": _failed_temp_task,
    "RollbackOperationTask": _failed_temp_task,
    "FailOperationTask": _failed_temp_task,
    "CancelOperationTask": _cancel_task,
    "Subscriptions": _subscriptions,
    "IndividualSubscription": _subscriptions,
    "InstantiateVNFTaskWorkflow": _workflow_on("NOT_INSTANTIATED"),
    "ScaleVNFWorkflow": _workflow_on("INSTANTIATED"),
    "ScaleVNFToLevelWorkflow": _workflow_on("INSTANTIATED"),
    "ChangeVNFFlavourWorkflow": _workflow_on("INSTANTIATED"),
    "ChangeExternalVNFConnectivityWorkflow": _workflow_on("INSTANTIATED"),
    "OperateVNFWorkflow": _workflow_on("INSTANTIATED"),
    "HealVNFWorkflow": _workflow_on("INSTANTIATED"),
    "TerminateVNFWorkflow": _workflow_on("INSTANTIATED"),
    "ModifyVNFInformationWorkflow": _workflow_on("INSTANTIATED"),
    "DeleteVNFWorkflow": _workflow_on("NOT_INSTANTIATED"),
    "CreateVNFWorkflow": _create_workflow,
    "FailOperationWorkflow": _failed_temp_workflow(1),
    "RetryOperationWorkflow": _failed_temp_workflow(1),
    "RollBackOperationWorkflow": _failed_temp_workflow(1),
    "CancelOperationWorkflow": _cancel_workflow,
    "NotificationEndpoint": _notification_endpoint,
}


# ----- VNF package management (SOL003 clause 10) -----


def _packages(ctx):
    s = ctx.state
    return {
        "vnfPackageId": s["package"],
        "vndId": VNFD_ID,
        "vnfPkgZipVNFD": s["package"],
        "vndIdZipVnfd": VNFD_ID,
        "vnfPkgPlainVNFD": s["single_package"],
        "vnfPackageOctetStreamId": s["package"],
        "vnfdOctetStreamId": VNFD_ID,
        "onboardingStateVnfPkgId": s["created_package"],
        "onboardingStateVnfdId": not_existing(),
        "artifactPath": s["artifact_path"],
        "full_size": str(s["artifact_size"]),
        "erroneousVnfPackageId": not_existing(),
        "erroneousVnfPkgId": not_existing(),
        "erroneousVnfdId": not_existing(),
        "erroneousSubscriptionId": not_existing(),
        "callbackUri": ctx.stub + "/vnfpkgm/subscriptions",
        "filter_ok": f"callbackUri={ctx.stub}/vnfpkgm/subscriptions",
        # The suite's own filter syntax (attr=value&...), with this package's values.
        "POS_FILTER": f"vnfdId={VNFD_ID}&vnfProvider=ETSI",
    }


PKGM_SUITES = {name: _packages for name in (
    "ApiVersion",
    "VNFPackages",
    "IndividualVNFPackage",
    "VNFPackageContent",
    "VNFDInIndividualVNFPackage",
    "VNFPackageArtifacts",
    "Subscriptions",
    "IndividualSubscription",
    "PackageManagementNotification",
)}


def _silent_pkgm_subscription(ctx, callback):
    """A VNF package management subscription (to the stub) whose filter names a package that
    never exists, so it receives no notification."""
    body = {
        "callbackUri": callback,
        "filter": {"notificationTypes": ["VnfPackageChangeNotification"], "vnfPkgId": [not_existing()]},
    }
    return ctx.vnfm.expect(201, "POST", "/vnfpkgm/v1/subscriptions", body).json()["id"]


def _pkgm_individual_subscription(ctx):
    # The suite reads the subscription, then deletes it (7.3.3.7.7).
    v = _packages(ctx)
    v["subscriptionId"] = _silent_pkgm_subscription(ctx, ctx.stub + "/vnfpkgm/individual")
    return v


PKGM_SUITES["IndividualSubscription"] = _pkgm_individual_subscription


def _package_content(ctx):
    # The Range tests compare Content-Range with `<range>/${full_size}`: for the package
    # content that is the size of the whole package, not of the artifact (the default).
    v = _packages(ctx)
    v["full_size"] = str(ctx.state["package_size"])
    return v


PKGM_SUITES["VNFPackageContent"] = _package_content


# ----- single tests -----


def _more_than_a_page(ctx, count_path, make):
    r = ctx.vnfm.expect(200, "GET", count_path)
    have = len(r.json())
    # A full first page means a Link header already; otherwise add what is missing.
    if r.header("Link"):
        return {}
    for _ in range(101 - have):
        make()
    return {}


def _paged_instances(ctx, variables):
    return _more_than_a_page(ctx, "/vnflcm/v1/vnf_instances", lambda: ctx.not_instantiated("paging"))


def _paged_op_occs(ctx, variables):
    inst = ctx.not_instantiated("paging")

    def modify():
        op = ctx.vnfm.expect(202, "PATCH", f"/vnflcm/v1/vnf_instances/{inst}", {"vnfInstanceDescription": "paging"})
        ctx.vnfm.wait(op.header("Location").rsplit("/", 1)[-1])

    return _more_than_a_page(ctx, "/vnflcm/v1/vnf_lcm_op_occs", modify)


def _paged_subscriptions(ctx, variables):
    # Filtered to an instance that never changes, so these subscriptions stay silent; each
    # has its own callback URI, since an identical subscription is not created twice (303).
    quiet = ctx.not_instantiated("quiet")
    count = iter(range(1000))
    return _more_than_a_page(
        ctx, "/vnflcm/v1/subscriptions", lambda: ctx.vnfm.subscribe(f"{ctx.stub}/paging/{next(count)}", {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [quiet]}})
    )


def _paged_pkgm_subscriptions(ctx, variables):
    count = iter(range(1000))
    return _more_than_a_page(
        ctx, "/vnfpkgm/v1/subscriptions", lambda: _silent_pkgm_subscription(ctx, f"{ctx.stub}/vnfpkgm/paging/{next(count)}")
    )


def _paged_packages(ctx, variables):
    return _more_than_a_page(ctx, "/vnfpkgm/v1/vnf_packages", ctx.vnfm.create_package)


def _paged_onboarded_packages(ctx, variables):
    """7.3.3.1.27: more than a page of ONBOARDED packages, each with its own vnfdId (copies
    of package-single under fresh ids)."""
    single = Path(__file__).resolve().parent / "package-single"
    vnfd_file = single / "Definitions" / "single.vnfd.yaml"
    text = vnfd_file.read_text()

    def onboard():
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "pkg"
            shutil.copytree(single, copy)
            (copy / "Definitions" / "single.vnfd.yaml").write_text(text.replace(SINGLE_VNFD_ID, not_existing()))
            ctx.vnfm.onboard(build_package(copy))

    return _more_than_a_page(ctx, "/vnfpkgm/v1/onboarded_vnf_packages", onboard)


def _operation_in_progress(ctx, variables):
    """7.3.1.2.6: "another LCM operation is ongoing" on the instance the PATCH targets."""
    ctx.processing_op(variables["vnfInstanceId"])
    return {}


def _later(delay, action):
    """Runs `action` after `delay` seconds in the background: the suites' "external action"
    must happen after the test has configured the MockServer expectations."""

    def run():
        time.sleep(delay)
        try:
            action()
        except SeedError as e:  # reported through the test's own verification
            print(f"conformance: external action failed: {e}")

    threading.Thread(target=run, daemon=True).start()


def _trigger_operation(ctx, variables):
    inst = variables["vnfInstanceId"]

    def act():
        op = ctx.vnfm.instantiate(inst)
        occ = ctx.vnfm.wait(op)
        if occ["operationState"] in MOVING:
            raise SeedError("instantiation did not finish")
        terminate = ctx.vnfm.task(inst, "terminate", {"terminationType": "FORCEFUL"})
        ctx.vnfm.wait(terminate)

    _later(2, act)
    return {}


def _trigger_creation(ctx, variables):
    _later(2, lambda: ctx.not_instantiated("notified"))
    return {}


def _trigger_deletion(ctx, variables):
    inst = ctx.not_instantiated("to-delete")
    _later(2, lambda: ctx.vnfm.expect(204, "DELETE", f"/vnflcm/v1/vnf_instances/{inst}"))
    return {}


def _paged_alarms(ctx, variables):
    inst = variables["managedObjectId"]
    count = iter(range(1000))
    return _more_than_a_page(ctx, "/vnffm/v1/alarms", lambda: raise_alarm(ctx, inst, f"paging {next(count)}"))


def _paged_fm_subscriptions(ctx, variables):
    # Filtered to an instance that does not exist, so these subscriptions stay silent.
    quiet = not_existing()
    count = iter(range(1000))

    def subscribe():
        body = {
            "callbackUri": f"{ctx.stub}/fm/paging/{next(count)}",
            "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [quiet]}},
        }
        ctx.vnfm.expect(201, "POST", "/vnffm/v1/subscriptions", body)

    return _more_than_a_page(ctx, "/vnffm/v1/subscriptions", subscribe)


def _single_file_vnfd(ctx, variables):
    """7.3.3.4.12 and .14 address "a package whose VNFD is one file" through `vndId`, which the
    other onboarded-package tests use for the multi-file package."""
    return {"vndId": SINGLE_VNFD_ID}


PRECONDITIONS = {
    "7.3.1.1.12": _paged_instances,
    "7.3.1.11.12": _paged_op_occs,
    "7.3.1.17.14": _paged_subscriptions,
    "7.3.3.1.13": _paged_packages,
    "7.3.3.6.11": _paged_pkgm_subscriptions,
    "7.3.3.1.27": _paged_onboarded_packages,
    "7.3.1.2.6": _operation_in_progress,
    "7.3.5.1.12": _paged_alarms,
    "7.3.5.3.14": _paged_fm_subscriptions,
    "7.3.3.4.12": _single_file_vnfd,
    "7.3.3.4.14": _single_file_vnfd,
    "7.3.1.34.1": _trigger_operation,
    "7.3.1.34.2": _trigger_operation,
    "7.3.1.34.3": _trigger_creation,
    "7.3.1.34.4": _trigger_deletion,
}


# ----- VNF fault management (SOL003 clause 7) -----


def raise_alarm(ctx, instance, cause):
    """An alarm about `instance`, raised the way Prometheus Alertmanager raises one: a firing
    alert posted to the server's receiver. Returns the alarm's id."""
    alert = {
        "status": "firing",
        "labels": {
            "alertname": "ConformanceFault",
            "vnf_instance_id": instance,
            "perceived_severity": "critical",
            "event_type": "COMMUNICATIONS_ALARM",
            "function_type": "vnffm",
        },
        "annotations": {"probable_cause": cause, "fault_details": "raised for the ETSI suites"},
        "startsAt": "2026-01-01T00:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus/graph",
        "fingerprint": cause,
    }
    webhook = {
        "version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": "firing",
        "receiver": "vnfm", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
        "externalURL": "http://alertmanager", "alerts": [alert],
    }
    ctx.vnfm.expect(204, "POST", "/vnffm/v1/alertmanager", webhook)
    alarms = ctx.vnfm.expect(200, "GET", f"/vnffm/v1/alarms?filter=(eq,managedObjectId,{instance})").json()
    return next(a["id"] for a in alarms if a["probableCause"] == cause)


def _fm(ctx):
    """An instantiated instance with an open alarm, and an FM subscription (to the stub) that
    hears only of that instance."""
    inst = ctx.instantiated("fm")
    alarm = raise_alarm(ctx, inst, f"conformance fault {not_existing()}")
    body = {
        "callbackUri": ctx.stub + "/fm",
        "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [inst]}},
    }
    sub = ctx.vnfm.expect(201, "POST", "/vnffm/v1/subscriptions", body).json()["id"]
    return {
        "alarmId": alarm,
        # The suites' variables file sets alarm_filter twice; the NFVO's (nsInstanceId) wins.
        "alarm_filter": "managedObjectId",
        "managedObjectId": inst,
        "subscriptionId": sub,
    }


FM_SUITES = {
    name: _fm
    for name in (
        "ApiVersion",
        "Alarms",
        "IndividualAlarm",
        "Subscriptions",
        "IndividualSubscription",
        # SOL002 only.
        "EscalatePerceivedSeverityTask",
        "NotificationEndpoint",
    )
}


# ----- VNF indicators (SOL003 clause 8) -----


def indicator_value(ctx, value):
    """A new instantiated instance of the indicator VNFD whose indicator has `value`, set the
    way an EM sets it. Returns the instance."""
    inst = ctx.vnfm.create_instance(INDICATOR_VNFD_ID, "indicators")
    occ = ctx.vnfm.wait(ctx.vnfm.instantiate(inst, flavour="simple"))
    if occ["operationState"] != "COMPLETED":
        raise SeedError(f"instantiation of {inst} ended {occ['operationState']}: {occ.get('error')}")
    ctx.vnfm.expect(200, "PUT", f"/vnfm/v1/indicators/{inst}/{INDICATOR_ID}", {"value": value})
    return inst


def _indicators(ctx):
    """An instantiated instance of the indicator VNFD with a value of its indicator, and an
    indicator subscription (to the stub) for that instance."""
    inst = indicator_value(ctx, {"load": 42})
    body = {
        "callbackUri": ctx.stub + "/vnfind",
        "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [inst]}},
    }
    sub = ctx.vnfm.expect(201, "POST", "/vnfind/v1/subscriptions", body).json()["id"]
    return {
        "vnfInstanceId": inst,
        "indicatorId": INDICATOR_ID,
        "subscriptionId": sub,
        "POS_FIELDS": f"name=vnfIndicator&vnfInstanceId={inst}",
    }


def _paged_indicators(ctx, variables):
    count = iter(range(1000))
    return _more_than_a_page(ctx, "/vnfind/v1/indicators", lambda: indicator_value(ctx, {"load": next(count)}))


def _paged_indicator_subscriptions(ctx, variables):
    # Filtered to an instance that does not exist, so these subscriptions stay silent.
    quiet = not_existing()
    count = iter(range(1000))

    def subscribe():
        body = {
            "callbackUri": f"{ctx.stub}/vnfind/paging/{next(count)}",
            "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [quiet]}},
        }
        ctx.vnfm.expect(201, "POST", "/vnfind/v1/subscriptions", body)

    return _more_than_a_page(ctx, "/vnfind/v1/subscriptions", subscribe)


IND_SUITES = {
    name: _indicators
    for name in (
        "ApiVersion",
        "VNFIndicators",
        "VnfIndicatorsInVnfInstanceId",
        "IndividualVNFindicator",
        "Subscriptions",
        "IndividualSubscription",
        "VnfIndicatorNotification",
    )
}


PRECONDITIONS.update(
    {
        "7.3.6.1.12": _paged_indicators,
        "7.3.6.4.11": _paged_indicator_subscriptions,
    }
)


# ----- VNF performance management (SOL003 clause 6) -----


def _pm(ctx):
    """An instantiated instance with a PM job (collecting every second) that has a report, a
    threshold, and a PM subscription (to the stub's `/endpoint`, where the notification suite
    listens) that hears only of that instance."""
    inst = ctx.instantiated("pm")
    body = {
        "callbackUri": ctx.stub + "/endpoint",
        "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [inst]}},
    }
    sub = ctx.vnfm.expect(201, "POST", "/vnfpm/v1/subscriptions", body).json()["id"]
    job_body = {
        "objectInstanceIds": [inst],
        "criteria": {"performanceMetric": [PM_METRIC], "collectionPeriod": 1, "reportingPeriod": 1},
    }
    job = ctx.vnfm.expect(201, "POST", "/vnfpm/v1/pm_jobs", job_body).json()["id"]
    threshold_body = {
        "objectInstanceId": inst,
        "criteria": {
            "performanceMetric": PM_METRIC,
            "thresholdType": "SIMPLE",
            "simpleThresholdDetails": {"thresholdValue": 40, "hysteresis": 5},
        },
    }
    threshold = ctx.vnfm.expect(201, "POST", "/vnfpm/v1/thresholds", threshold_body).json()["id"]
    ctx.deletions += [
        f"/vnfpm/v1/subscriptions/{sub}",
        f"/vnfpm/v1/pm_jobs/{job}",
        f"/vnfpm/v1/thresholds/{threshold}",
    ]
    deadline = time.monotonic() + 30
    while True:
        reports = ctx.vnfm.expect(200, "GET", f"/vnfpm/v1/pm_jobs/{job}").json().get("reports") or []
        if reports:
            break
        if time.monotonic() > deadline:
            raise SeedError(f"PM job {job} has no report after 30 s (is Prometheus answering?)")
        time.sleep(0.5)
    return {
        "pmJobId": job,
        "reportId": reports[0]["href"].rsplit("/", 1)[1],
        "thresholdId": threshold,
        "subscriptionId": sub,
        "callback_endpoint": "/endpoint",
        # Not a variable of the suites: what the paging pre-conditions create PM jobs and
        # thresholds for.
        "pmVnfInstanceId": inst,
    }


def _paged_pm(ctx, path, body):
    """More PM resources at `path` than a page holds, each made from `body`. They stay until
    the server stops (the listener that makes them cannot hand them to the suite's teardown);
    they are idle (hourly jobs) or cheap (a threshold no value reaches)."""
    return _more_than_a_page(ctx, path, lambda: ctx.vnfm.expect(201, "POST", path, body))


def _paged_pm_jobs(ctx, variables):
    # Hourly reports: the extra jobs stay idle while the suite runs.
    criteria = {"performanceMetric": [PM_METRIC], "collectionPeriod": 3600, "reportingPeriod": 3600}
    body = {"objectInstanceIds": [variables["pmVnfInstanceId"]], "criteria": criteria}
    return _paged_pm(ctx, "/vnfpm/v1/pm_jobs", body)


def _paged_thresholds(ctx, variables):
    criteria = {
        "performanceMetric": PM_METRIC,
        "thresholdType": "SIMPLE",
        "simpleThresholdDetails": {"thresholdValue": 1000, "hysteresis": 1},
    }
    body = {"objectInstanceId": variables["pmVnfInstanceId"], "criteria": criteria}
    return _paged_pm(ctx, "/vnfpm/v1/thresholds", body)


def _paged_pm_subscriptions(ctx, variables):
    # Filtered to an instance that does not exist, so these subscriptions stay silent.
    count = iter(range(1000))
    quiet = not_existing()

    def body():
        return {
            "callbackUri": f"{ctx.stub}/vnfpm/paging/{next(count)}",
            "filter": {"vnfInstanceSubscriptionFilter": {"vnfInstanceIds": [quiet]}},
        }

    return _more_than_a_page(ctx, "/vnfpm/v1/subscriptions", lambda: ctx.vnfm.expect(201, "POST", "/vnfpm/v1/subscriptions", body()))


PRECONDITIONS.update(
    {
        "7.3.4.1.13": _paged_pm_jobs,
        "7.3.4.4.9": _paged_thresholds,
        "7.3.4.6.11": _paged_pm_subscriptions,
    }
)

PM_SUITES = {
    name: _pm
    for name in (
        "ApiVersion",
        "PMJobs",
        "IndividualPmJob",
        "IndividualReport",
        "Thresholds",
        "IndividualThreshold",
        "Subscriptions",
        "IndividualSubscription",
        "PerformanceManagementNotification",
    )
}


def before_test(ctx: Ctx, test_id: str, variables: dict) -> dict:
    """Establishes the documented pre-condition of test `test_id`; returns test variables."""
    action = PRECONDITIONS.get(test_id)
    return action(ctx, variables) if action else {}
