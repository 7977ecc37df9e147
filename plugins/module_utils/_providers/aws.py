# Copyright: (c) 2026, aifactory.topology contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWS: EC2 ``DescribeInstanceTopology`` through boto3, once per region.

A region with 100 requested instances or fewer passes their ids (the API's limit); a larger one
pages with ``MaxResults=page_size``. ``NetworkNodes`` come root-first and are reversed into tiers
(closest first); ``CapacityBlockId`` is the accelerator domain (an UltraServer).

params: ``instances`` (region = AWS region), ``endpoint_url`` (another EC2 endpoint, e.g. a test
server), ``profile`` (a named profile), plus the common cloud settings.
creds: ``access_key_id``, ``secret_access_key``, ``session_token``; without them boto3's default
chain applies (``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``, IRSA, Pod Identity, the instance role).
"""

from __future__ import annotations

import logging

from ansible_collections.aifactory.topology.plugins.module_utils._base.deadline import (
    attempt_budget,
    call_within,
)
from ansible_collections.aifactory.topology.plugins.module_utils._base.errors import (
    NodeDataError,
    RemoteAPIError,
    TopologyError,
)
from ansible_collections.aifactory.topology.plugins.module_utils._transport.http import (
    RETRY_STATUS,
    HttpError,
    RetryableError,
    call_with_retries,
    paginate,
    retry_after_seconds,
)
from ansible_collections.aifactory.topology.plugins.module_utils._providers import (
    _cloud,
    _specs,
)

try:
    import boto3
    import botocore.config
    import botocore.exceptions
    import botocore.parsers

    HAS_BOTO3 = True
except ImportError:  # pragma: no cover - exercised only where boto3 is missing
    HAS_BOTO3 = False

NAME = "aws"
MAX_EXPLICIT_IDS = 100  # DescribeInstanceTopology takes at most 100 instance ids
DEFAULT_PAGE_SIZE = _specs.AWS_PARAMS["page_size"]["default"]
THROTTLING_CODES = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException", "InternalError",
                              "ServiceUnavailable", "Unavailable"})


def discover(params, creds, warn):
    if not HAS_BOTO3:
        raise TopologyError("the aws provider needs the Python library 'boto3' on the host that runs it")
    regions, placed = _cloud.placements(params, NAME)
    session = _session(params, creds)
    limit = _cloud.page_size(params, DEFAULT_PAGE_SIZE, warn)
    for region, mapping in regions:
        client = _client(session, params, region)
        request = {"InstanceIds": sorted(mapping)} if len(mapping) <= MAX_EXPLICIT_IDS else {"MaxResults": limit}
        for item in paginate(lambda token: _page(client, params, region, request, token)):
            _place(placed, item, region)
    return placed.topology(warn)


def _session(params, creds):
    access_key = _cloud.secret(creds, "access_key_id")
    secret_key = _cloud.secret(creds, "secret_access_key")
    if bool(access_key) != bool(secret_key):
        raise TopologyError("the aws provider needs both creds.access_key_id and creds.secret_access_key, or neither "
                            "(then boto3's default credential chain applies)")
    try:
        session = boto3.session.Session(aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                                        aws_session_token=_cloud.secret(creds, "session_token"),
                                        profile_name=_cloud.setting(params, "profile"))
    except botocore.exceptions.ProfileNotFound as exc:
        raise TopologyError(f"aws params.profile: {exc}") from None
    if not access_key:
        _resolve_chain(session)
    return session


class _ImdsFailures(logging.Handler):
    """botocore's instance metadata fetcher logs its failures (debug) and returns nothing: count them."""

    # The log templates (never their arguments, which may hold a response) of an IMDS that refused or broke.
    TEMPLATES = {"Max number of attempts exceeded": "no answer after botocore's attempts (a refused or missing "
                                                    "IMDSv2 session token, or HTTP errors)",
                 "Bad IMDS request": "it refused the request as bad (HTTP 400)",
                 "Error response received": "it answered with an error instead of the role's credentials"}

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.reasons = []

    def emit(self, record):
        template = str(record.msg)
        self.reasons += [reason for start, reason in self.TEMPLATES.items() if template.startswith(start)]


def _resolve_chain(session):
    """Resolve boto3's default chain now, so that an instance metadata service that failed is named."""
    logger = logging.getLogger("botocore.utils")
    handler, level = _ImdsFailures(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        credentials = session.get_credentials()
    except botocore.exceptions.BotoCoreError as exc:  # a broken profile, web identity or container source
        raise RemoteAPIError(f"boto3's credential chain failed: {exc.__class__.__name__}") from None
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    if credentials is None and handler.reasons:
        raise RemoteAPIError("the aws provider found no AWS credentials: the EC2 instance metadata service (IMDS) "
                             f"gave none, {handler.reasons[0]}; check the instance profile and the IMDS hop limit, "
                             "or set creds")


def _client(session, params, region):
    settings = _cloud.client_settings(params)
    verify, ca_bundle = _cloud.tls_settings(params)
    config = botocore.config.Config(
        # Retries are ours (one policy for every provider, delays injectable); boto3 tries once.
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=settings["timeout"], read_timeout=settings["timeout"],
        user_agent_extra="aifactory.topology")
    return session.client("ec2", region_name=region, endpoint_url=_cloud.setting(params, "endpoint_url"),
                          config=config, verify=(ca_bundle or True) if verify else False)


def _page(client, params, region, request, token):
    settings = _cloud.client_settings(params)
    arguments = dict(request, NextToken=token) if token else dict(request)
    what = f"EC2 DescribeInstanceTopology in {region}"

    def attempt():
        # boto3's read_timeout bounds each socket read only: a total limit per attempt, as for HTTP.
        budget = attempt_budget(settings["timeout"])
        if budget <= 0:
            raise HttpError(f"{what}: the discovery deadline has passed")
        try:
            return call_within(lambda: client.describe_instance_topology(**arguments), budget)
        except TimeoutError:
            raise RetryableError(f"no complete response within {budget:g} s") from None
        except botocore.exceptions.ClientError as exc:
            raise _client_error(exc, what) from None
        except (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError) as exc:
            raise RetryableError(exc.__class__.__name__) from None
        except botocore.exceptions.NoCredentialsError:
            raise TopologyError("the aws provider found no AWS credentials: set creds.access_key_id and "
                                "creds.secret_access_key, AWS_* environment variables, a profile or an instance role") from None
        except botocore.parsers.ResponseParserError as exc:
            raise RemoteAPIError(f"{what}: the response is not valid EC2 XML: {str(exc)[:200]}") from None

    response = call_with_retries(attempt, what, attempts=settings["attempts"], backoff=settings["backoff"],
                                 max_retry_after=settings["max_retry_after"], sleep=settings["sleep"])
    if not isinstance(response, dict) or not isinstance(response.get("Instances"), list):
        raise RemoteAPIError(f"{what}: the response has no instanceSet (not a DescribeInstanceTopology response)")
    return response["Instances"], response.get("NextToken")


def _client_error(exc, what):
    error = exc.response.get("Error", {}) if isinstance(exc.response, dict) else {}
    meta = exc.response.get("ResponseMetadata", {}) if isinstance(exc.response, dict) else {}
    code, status = error.get("Code", "Unknown"), meta.get("HTTPStatusCode")
    if status in RETRY_STATUS or code in THROTTLING_CODES:
        headers = meta.get("HTTPHeaders") or {}
        return RetryableError(f"HTTP {status} {code}", retry_after_seconds(headers.get("retry-after")))
    hint = " (the caller needs the IAM permission ec2:DescribeInstanceTopology)" if code in (
        "UnauthorizedOperation", "AccessDenied", "AccessDeniedException") else ""
    return RemoteAPIError(f"{what}: HTTP {status} {code}: {error.get('Message', '')}{hint}", status)


def _place(placed, item, region):
    if not isinstance(item, dict) or not isinstance(item.get("InstanceId"), str):
        raise RemoteAPIError(f"EC2 DescribeInstanceTopology in {region}: an instance without instanceId: {item!r:.200}")
    with placed.instance(item["InstanceId"]):
        nodes = item.get("NetworkNodes") or []
        if not isinstance(nodes, list):
            raise NodeDataError(f"EC2 DescribeInstanceTopology in {region}: instance {item['InstanceId']!r} has "
                                f"networkNodeSet {nodes!r:.100}, not a list")
        if nodes:  # an unsupported type or a stopped instance has no network nodes: no topology data
            # Root first: reversed into tiers. Placements.add checks each id (a string, no gap), naming the
            # API's own positions.
            placed.add(item["InstanceId"], list(reversed(nodes)), item.get("CapacityBlockId"),
                       fields=_cloud.path_fields("networkNodeSet[{}]", len(nodes), root_first=True),
                       domain_field="capacityBlockId")
