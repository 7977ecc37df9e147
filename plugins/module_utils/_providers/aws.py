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

from ansible_collections.aifactory.topology.plugins.module_utils._base import secrets as _secrets
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
    MAX_CREDENTIAL_BYTES,
    MAX_RESPONSE_BYTES,
    RETRY_STATUS,
    HttpError,
    RetryableError,
    bound_session,
    call_with_retries,
    paginate,
    retry_after_seconds,
)
from ansible_collections.aifactory.topology.plugins.module_utils._providers import (
    _aws_metadata as _metadata,
    _cloud,
    _specs,
)

try:
    import boto3
    import boto3.session
    import botocore.awsrequest
    import botocore.config
    import botocore.exceptions
    import botocore.parsers
    import botocore.session

    HAS_BOTO3 = True
except ImportError:  # pragma: no cover - exercised only where boto3 is missing
    HAS_BOTO3 = False

NAME = "aws"
MAX_EXPLICIT_IDS = 100  # DescribeInstanceTopology takes at most 100 instance ids
DEFAULT_PAGE_SIZE = _specs.AWS_PARAMS.argument_spec["page_size"]["default"]
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
    # Both keys or neither: checked with the spec (_specs.AWS_CREDS).
    core = botocore.session.Session()
    # Every request any client of this session sends (EC2, and STS inside the credential chain) goes through
    # the collection's bounded client: time, bytes, no redirect to another host.
    core.register("before-send", _BoundedSend(params))
    try:
        session = boto3.session.Session(aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                                        aws_session_token=_cloud.secret(creds, "session_token"),
                                        profile_name=_cloud.setting(params, "profile"), botocore_session=core)
    except botocore.exceptions.ProfileNotFound as exc:
        raise TopologyError(f"aws params.profile: {exc}") from None
    if not access_key:
        _resolve_chain(core, params)
    return session


def _resolve_chain(core, params):
    """boto3's default chain, inside the discovery's limits, with the two metadata sources resolved by us.

    botocore fetches the container and instance metadata credentials with its own client, outside any
    deadline and without a byte limit (a metadata service that drips held a run for minutes; 300 MB of
    "credentials" took a gigabyte): they are taken out of its chain, and once the rest of the chain
    (environment, profile, web identity, SSO, process) found nothing, fetched through the collection's
    bounded client and handed to boto3 as static credentials (a discovery ends long before they expire).
    """
    resolver = core.get_component("credential_provider")
    for name in ("container-role", "iam-role"):
        resolver.remove(name)
    settings = _cloud.client_settings(params)
    budget = attempt_budget(settings["timeout"] * settings["attempts"])

    def resolve():
        found = core.get_credentials()
        return None if found is None else found.get_frozen_credentials()

    try:
        frozen = call_within(resolve, budget)
    except TimeoutError:
        raise RemoteAPIError(f"boto3's credential chain (profile, web identity, SSO or process) gave no credentials "
                             f"within {budget:g} s") from None
    except botocore.exceptions.BotoCoreError as exc:  # a broken profile, web identity or process source
        raise RemoteAPIError(f"boto3's credential chain failed: {exc.__class__.__name__}") from None
    except botocore.exceptions.ClientError as exc:  # STS refused or failed (web identity, assume role)
        error = _client_error(exc, "STS (boto3's credential chain)")
        if isinstance(error, RetryableError):  # botocore's own retries for STS are spent
            error = RemoteAPIError(f"STS (boto3's credential chain): {error.reason}")
        raise error from None
    except HttpError as exc:  # the bounded session's refusal: too large, a redirect to another host, the deadline
        raise HttpError(f"boto3's credential chain: {exc}", exc.status) from None
    if frozen is not None:
        _secrets.register(frozen.access_key, frozen.secret_key, frozen.token)
        return
    found = _metadata.credentials(core, params)
    if found is not None:
        core.set_credentials(*found)


class _BoundedSend:
    """botocore's ``before-send`` hook: the request sent through the collection's bounded session.

    EC2 answers up to MAX_RESPONSE_BYTES, every other service (STS in the chain) up to MAX_CREDENTIAL_BYTES,
    each exchange within params.timeout and the discovery deadline (``_http.bound_session``).
    """

    def __init__(self, params):
        import requests  # pylint: disable=import-outside-toplevel  # a dependency of boto3's users here

        self.requests = requests
        settings = _cloud.client_settings(params)
        verify, ca_bundle = _cloud.tls_settings(params)
        self.ec2_verify = ca_bundle if (verify and ca_bundle) else bool(verify)
        self.sessions = {True: bound_session(requests.Session(), settings["timeout"], MAX_RESPONSE_BYTES),
                         False: bound_session(requests.Session(), settings["timeout"], MAX_CREDENTIAL_BYTES)}

    def __call__(self, request, event_name="", **_kwargs):
        ec2 = event_name.startswith("before-send.ec2.")
        exceptions = self.requests.exceptions
        try:
            response = self.sessions[ec2].request(request.method, request.url, headers=dict(request.headers.items()),
                                                  data=request.body, verify=self.ec2_verify if ec2 else True,
                                                  allow_redirects=False)
        except exceptions.ConnectTimeout:
            raise botocore.exceptions.ConnectTimeoutError(endpoint_url=request.url) from None
        except exceptions.Timeout:
            raise botocore.exceptions.ReadTimeoutError(endpoint_url=request.url) from None
        except exceptions.SSLError:
            raise botocore.exceptions.SSLError(endpoint_url=request.url, error="certificate verify failed") from None
        except exceptions.ConnectionError:
            raise botocore.exceptions.EndpointConnectionError(endpoint_url=request.url) from None
        except exceptions.RequestException as exc:
            # Never str(exc): requests may quote a header (the signature, the session token).
            raise botocore.exceptions.HTTPClientError(error=exc.__class__.__name__) from None
        return botocore.awsrequest.AWSResponse(request.url, response.status_code, dict(response.headers),
                                               _Body(response.content))


class _Body:
    """What botocore reads of a response: ``stream()``."""

    def __init__(self, content):
        self.content = content

    def stream(self, **_kwargs):
        yield self.content


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
            raise RemoteAPIError(f"{what}: the response is not valid EC2 XML: {_secrets.excerpt(exc)}") from None

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
    # The message may echo the request (its X-Amz-Security-Token): scrubbed of the run's secrets, clipped.
    message = _secrets.excerpt(error.get("Message", ""))
    return RemoteAPIError(f"{what}: HTTP {status} {_secrets.excerpt(code, 100)}: {message}{hint}", status)


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
