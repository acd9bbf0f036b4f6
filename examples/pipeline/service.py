#!/usr/bin/env python3
"""A small push service of the kind `pushbench pipeline` measures.

Its front door takes "notify these devices" requests over HTTP (aiohttp), queues them, and workers send
one push per device token: to APNs with aioapns, to FCM with firebase-admin. Each push carries the
request's correlation id ("id") as the custom key "pipeline_id" (APNs) or the data field "pipeline_id"
(FCM), which is how pushbench matches every push to the request that caused it.

    POST /notify  {"id": "pb-7f3a-000000123", "tokens": ["<hex>", ...], "route": "apns"|"fcm",
                   "title": "...", "body": "..."}
                  -> 202 {"id": ..., "pushes": N} once queued; 400 {"error": ...} for a bad body
    GET /healthz  -> 200 "ok"
    GET /stats    -> 200, the service's own counts (JSON)

APNs and FCM are wherever --apns and --fcm point: in a pipeline run, pushbench's egress gateway, whose CA
the service trusts through --cafile. Faults for the walk-through in docs/pipeline.md, each off unless
asked: --drop-every, --retry, --stall-at/--stall-for, --die-after (see --help).

Run it from the repository's root: python3 examples/pipeline/service.py --help
"""
import argparse
import asyncio
import json
import logging
import os
import secrets
import signal
import ssl
import sys
import time
import warnings
from collections import Counter
from urllib.parse import urlsplit

try:
    from aiohttp import web
    from aioapns import APNs, NotificationRequest, PushType
    from aioapns.connection import APNsProductionClientProtocol
    import firebase_admin
    from firebase_admin import credentials, messaging, _http_client
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
except ImportError as e:
    sys.exit("service.py: %s (scripts/setup installs aiohttp, aioapns and firebase-admin)" % e)

# firebase-admin 7 marks Message.token deprecated in favour of fid; FCM v1's message.token is what
# device registrations give a push service, so the service keeps it.
warnings.filterwarnings("ignore", message="Message.token is deprecated")

RETRYABLE = {429, 500, 503}
ATTEMPTS = 3
MAX_TOKENS = 500


def log(message):
    print("service: " + message, file=sys.stderr, flush=True)


class Once(logging.Filter):
    """Lets each of a library's log messages through once: the first says what is wrong (aioapns logs
    why a connection failed only there), the service's line once a second counts the rest."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    def filter(self, record):
        new = record.msg not in self.seen
        self.seen.add(record.msg)
        return new


def https_origin(text):
    """--apns/--fcm: an https:// URL with a host (and a port, 443 by default), nothing after it."""
    u = urlsplit(text)
    if u.scheme != "https" or not u.hostname or u.path not in ("", "/"):
        raise argparse.ArgumentTypeError("'%s' is not an https://HOST[:PORT] URL" % text)
    return "https://%s:%d" % (u.hostname if ":" not in u.hostname else "[%s]" % u.hostname, u.port or 443)


def positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("'%s' is not a positive integer" % text)
    return n


def seconds(text):
    s = float(text)
    if s < 0:
        raise argparse.ArgumentTypeError("'%s' is not a number of seconds" % text)
    return s


def parse_arguments():
    p = argparse.ArgumentParser(description="A small push service: HTTP front door, APNs and FCM senders.")
    p.add_argument("--listen", default="127.0.0.1:9000", metavar="HOST:PORT", help="front door (default %(default)s)")
    p.add_argument("--apns", required=True, type=https_origin, metavar="URL",
                   help="where APNs is: https://HOST:PORT (Apple's is https://api.push.apple.com)")
    p.add_argument("--fcm", required=True, type=https_origin, metavar="URL",
                   help="where FCM is: https://HOST:PORT (Google's is https://fcm.googleapis.com)")
    p.add_argument("--cafile", metavar="PEM",
                   help="the CA certificates both senders trust (pushbench's --tls-cert-out); read when the first "
                        "push goes out, waiting up to --wait-for-ca for it to appear; default: the system's")
    p.add_argument("--wait-for-ca", type=seconds, default=60, metavar="S", help="(default %(default)s)")
    p.add_argument("--apns-key", metavar="KEYID=FILE", help="provider-token key (.p8); default: a throwaway key")
    p.add_argument("--apns-team", metavar="TEAM", help="team id of --apns-key")
    p.add_argument("--apns-topic", default="com.example.app", help="apns-topic (default %(default)s)")
    p.add_argument("--fcm-credentials", metavar="JSON", help="service-account file; default: a throwaway account")
    p.add_argument("--fcm-token-uri", metavar="URL",
                   help="where access tokens come from (default: --fcm's /token, the gateway's token endpoint)")
    p.add_argument("--workers", type=positive, default=64, metavar="N",
                   help="requests sent at once (each sends its pushes at once) (default %(default)s)")
    p.add_argument("--retry", action="store_true",
                   help="resend a push answered 429, 500 or 503 (at most %d attempts, short backoff, Retry-After "
                        "honoured up to 1 s); without it a failed push is counted and dropped" % ATTEMPTS)
    p.add_argument("--drop-every", type=positive, metavar="N", help="fault: answer every Nth request 202 and forget it")
    p.add_argument("--stall-at", type=seconds, metavar="S", help="fault: S seconds after the first request ...")
    p.add_argument("--stall-for", type=seconds, metavar="D", help="... the workers send nothing for D seconds")
    p.add_argument("--die-after", type=positive, metavar="N",
                   help="fault: exit abruptly (status 70) right after answering request N 202: its pushes and "
                        "those still queued are never sent")
    a = p.parse_args()
    host, sep, port = a.listen.rpartition(":")
    if not sep or not port.isdigit():
        p.error("--listen: '%s' is not HOST:PORT" % a.listen)
    a.listen_host, a.listen_port = host.strip("[]") or "127.0.0.1", int(port)
    if (a.stall_at is None) != (a.stall_for is None):
        p.error("--stall-at and --stall-for go together")
    if a.apns_key and ("=" not in a.apns_key or not a.apns_team):
        p.error("--apns-key: give KEYID=FILE, and --apns-team with it")
    return a


def apns_key(args):
    """(key id, team id, PEM): --apns-key's, or a throwaway P-256 key (the egress checks none by default)."""
    if args.apns_key:
        key_id, path = args.apns_key.split("=", 1)
        with open(path) as f:
            return key_id, args.apns_team, f.read()
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return "PIPELINE01", args.apns_team or "PIPELINE02", pem


def service_account(args):
    """The FCM service account: --fcm-credentials' or a throwaway one; its token_uri is the egress's."""
    if args.fcm_credentials:
        with open(args.fcm_credentials) as f:
            account = json.load(f)
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        account = {"type": "service_account", "project_id": "pushbench", "private_key_id": secrets.token_hex(20),
                   "private_key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()).decode(),
                   "client_email": "pipeline@pushbench.iam.gserviceaccount.com", "client_id": "1"}
    account["token_uri"] = args.fcm_token_uri or args.fcm + "/token"
    return account


class Senders:
    """aioapns and firebase-admin, pointed at --apns and --fcm and trusting --cafile.

    Made when the first push goes out, not at start: in a pipeline run the egress writes its CA file
    just before the first request, so the service may start first and still trust the CA of this run.
    """

    def __init__(self, args):
        self.args = args
        self.key = apns_key(args)
        self.account = service_account(args)
        self.ready = None

    async def get(self):
        if self.ready is None:
            self.ready = asyncio.ensure_future(self._make())
        return await self.ready

    async def _make(self):
        a = self.args
        if a.cafile:
            deadline = time.monotonic() + a.wait_for_ca
            while not os.path.exists(a.cafile):
                if time.monotonic() > deadline:
                    log("%s did not appear within %gs; sending anyway" % (a.cafile, a.wait_for_ca))
                    break
                await asyncio.sleep(0.1)
            # firebase-admin's HTTP clients (httpx for sends, requests for tokens) read these.
            os.environ["SSL_CERT_FILE"] = os.environ["REQUESTS_CA_BUNDLE"] = a.cafile
        tls = ssl.create_default_context(cafile=a.cafile)
        tls.set_alpn_protocols(["h2"])
        key_id, team, pem = self.key
        apns = APNs(key=pem, key_id=key_id, team_id=team, topic=a.apns_topic, ssl_context=tls,
                    max_connections=4, err_func=self._quiet)
        # aioapns connects to its protocol class's APNS_SERVER:APNS_PORT (and sends that host in the
        # :authority); a subclass naming --apns is how it reaches a host other than Apple's.
        u = urlsplit(a.apns)
        apns.pool.protocol_class = type("Egress", (APNsProductionClientProtocol,),
                                        {"APNS_SERVER": u.hostname, "APNS_PORT": u.port})
        # firebase-admin posts to FCM_URL, formatted with the project id; it has no option for it.
        messaging._MessagingService.FCM_URL = a.fcm + "/v1/projects/{0}/messages:send"
        # firebase-admin resends 500 and 503 itself; the service decides (--retry), so it must not.
        _http_client.DEFAULT_HTTPX_RETRY_CONFIG.status_forcelist = []
        fcm = firebase_admin.initialize_app(credentials.Certificate(self.account), name="pipeline")
        log("sending to APNs at %s and FCM at %s%s" % (a.apns, a.fcm, ", trusting " + a.cafile if a.cafile else ""))
        return apns, fcm

    @staticmethod
    async def _quiet(request, result):
        pass  # aioapns would log each failure; the service counts them instead


class Service:
    def __init__(self, args):
        self.args = args
        self.senders = Senders(args)
        self.queue = asyncio.Queue()
        self.sending = asyncio.Event()  # cleared while --stall-at/--stall-for holds the workers
        self.sending.set()
        self.first_request = None
        self.counts = Counter()  # accepted, dropped, pushes_sent, retries, ...
        self.failures = Counter()  # final failures by status (or exception name)

    # Front door.

    async def notify(self, request):
        a = self.args
        try:
            job = parse_notify(await request.read())
        except ValueError as e:
            self.counts["bad_requests"] += 1
            return web.json_response({"error": str(e)}, status=400)
        self.counts["accepted"] += 1
        if self.first_request is None:
            self.first_request = time.monotonic()
            if a.stall_at is not None:
                loop = asyncio.get_running_loop()
                loop.call_later(a.stall_at, self.stall)
                loop.call_later(a.stall_at + a.stall_for, self.resume)
        answer = web.json_response({"id": job[0], "pushes": len(job[2])}, status=202)
        if a.die_after and self.counts["accepted"] == a.die_after:
            await answer.prepare(request)
            await answer.write_eof()
            log("--die-after %d: exiting now, %d requests unsent" % (a.die_after, self.queue.qsize() + 1))
            os._exit(70)
        if a.drop_every and self.counts["accepted"] % a.drop_every == 0:
            self.counts["dropped"] += 1
        else:
            self.queue.put_nowait(job)
        return answer

    def stall(self):
        log("--stall-at %g: the workers send nothing for %gs" % (self.args.stall_at, self.args.stall_for))
        self.sending.clear()

    def resume(self):
        log("the stall is over: %d requests waiting" % (self.queue.qsize() + self.args.workers))
        self.sending.set()

    async def healthz(self, request):
        return web.Response(text="ok\n")

    async def stats(self, request):
        return web.json_response(self.summary())

    def summary(self):
        return {**self.counts, "queued": self.queue.qsize(), "stalled": not self.sending.is_set(),
                "failures": {str(k): v for k, v in self.failures.items()}}

    # Workers.

    async def worker(self):
        while True:
            job = await self.queue.get()
            await self.sending.wait()
            pipeline_id, route, tokens, title, body = job
            send = self.send_apns if route == "apns" else self.send_fcm
            await asyncio.gather(*(self.push(send, pipeline_id, token, title, body) for token in tokens))

    async def push(self, send, pipeline_id, token, title, body):
        """One push, resent on 429/500/503 with --retry; never resent after a 200 or an unknown outcome."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                status, retry_after = await send(pipeline_id, token, title, body)
            except Exception as e:  # the connection failed: whether the push arrived is unknown
                status, retry_after = type(e).__name__, None
                if not self.failures[status]:
                    log("a push failed with %s: %s" % (status, e))
            if status == 200:
                self.counts["pushes_sent"] += 1
                return
            if self.args.retry and status in RETRYABLE and attempt < ATTEMPTS:
                self.counts["retries"] += 1
                await asyncio.sleep(min(1.0, retry_after if retry_after is not None else 0.05 * 2 ** (attempt - 1)))
                continue
            self.counts["pushes_failed"] += 1
            self.failures[status] += 1
            return

    async def send_apns(self, pipeline_id, token, title, body):
        apns, _ = await self.senders.get()
        message = {"aps": {"alert": {"title": title, "body": body}}, "pipeline_id": pipeline_id}
        result = await apns.send_notification(NotificationRequest(device_token=token, message=message,
                                                                  push_type=PushType.ALERT))
        return int(result.status), None  # aioapns does not expose the answer's headers

    async def send_fcm(self, pipeline_id, token, title, body):
        _, app = await self.senders.get()
        message = messaging.Message(token=token, data={"pipeline_id": pipeline_id},
                                    notification=messaging.Notification(title=title, body=body))
        error = (await messaging.send_each_async([message], app=app)).responses[0].exception
        if error is None:
            return 200, None
        response = getattr(error, "http_response", None)
        if response is None:
            raise error
        retry_after = response.headers.get("retry-after")
        return response.status_code, float(retry_after) if retry_after and retry_after.isdigit() else None

    async def report_failures(self):
        """Once a second, a line for the pushes that failed in it (none: no line)."""
        shown = Counter()
        while True:
            await asyncio.sleep(1)
            new = self.failures - shown
            if new:
                log("%d pushes failed and were dropped in the last second (%s)"
                    % (sum(new.values()), ", ".join("%s: %d" % kv for kv in sorted(new.items(), key=str))))
                shown = self.failures.copy()


def parse_notify(raw):
    """(id, route, tokens, title, body) from a /notify body; ValueError saying what is wrong."""
    try:
        o = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ValueError("the body is not JSON")
    if not isinstance(o, dict):
        raise ValueError("the body is not a JSON object")
    pipeline_id, tokens, route = o.get("id"), o.get("tokens"), o.get("route", "apns")
    if not isinstance(pipeline_id, str) or not pipeline_id:
        raise ValueError("\"id\" is missing or not a non-empty string")
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) and t for t in tokens):
        raise ValueError("\"tokens\" is missing or not a non-empty array of strings")
    if len(tokens) > MAX_TOKENS:
        raise ValueError("\"tokens\" has %d tokens; at most %d" % (len(tokens), MAX_TOKENS))
    if route not in ("apns", "fcm"):
        raise ValueError("\"route\" is neither \"apns\" nor \"fcm\"")
    title, body = o.get("title", ""), o.get("body", "")
    if not isinstance(title, str) or not isinstance(body, str):
        raise ValueError("\"title\" and \"body\" must be strings")
    return pipeline_id, route, tokens, title, body


async def main():
    args = parse_arguments()
    service = Service(args)
    app = web.Application()
    app.add_routes([web.post("/notify", service.notify), web.get("/healthz", service.healthz),
                    web.get("/stats", service.stats)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, args.listen_host, args.listen_port).start()
    tasks = [asyncio.create_task(service.worker()) for _ in range(args.workers)]
    tasks.append(asyncio.create_task(service.report_failures()))
    port = runner.addresses[0][1]  # the one chosen when --listen gave port 0
    log("listening on http://%s:%d (POST /notify, GET /healthz, GET /stats)" % (args.listen_host, port))
    stop = asyncio.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(s, stop.set)
    await stop.wait()
    log("stopping: %s" % json.dumps(service.summary()))
    # Not a graceful drain: the senders' HTTP/2 clients may wait on their connections while they wind
    # down, and nothing the service holds needs saving.
    os._exit(0)


if __name__ == "__main__":
    # A parent may start the service with these blocked (Foundation's Process on Linux passes its own
    # signal mask on); the service must still stop on them.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    logging.basicConfig(format="service: %(name)s: %(message)s")
    logging.getLogger("aioapns").addFilter(Once())
    asyncio.run(main())
