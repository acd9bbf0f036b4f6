/// The aioapns driver (Python, asyncio): aioapns used as a sender uses it, with only where it connects
/// changed. Kept as a Swift string so the test target has no unhandled resource file.
let aioapnsSource = #"""
#!/usr/bin/env python3
"""Drives aioapns, unmodified, against a gateway on 127.0.0.1.

Only where it connects changes: its api.push.apple.com:443 is mapped to the gateway's port, as a hosts
entry and a port forward would; SNI, the host header and certificate verification keep Apple's name.

Usage: aioapns_driver.py SPEC_JSON
SPEC: {"port": N, "cafile": PEM, "topic": T, "token": HEX, "reference": {...payload...},
       "key_id": K, "team_id": T,
       "clients": [{"name": N, "alpn": true|false, "key": P8 | "cert": PEM, "clock_offset": S,
                    "pushes": [{"name": N, "token": HEX, "payload_bytes": N, "clock_offset": S}]}]}
A client is one aioapns APNs object on one connection: "key" signs provider tokens (JWT), "cert"
presents a client certificate; "alpn" false leaves its ssl context offering no ALPN at all (aioapns'
own default). "clock_offset" shifts the client's wall clock by S seconds (a sender whose clock is off;
aioapns signs each token with iat = time.time() and re-signs it after 30 minutes).
Prints one JSON line per push: case, status, reason, timestamp, apns_id_echoed, alpn; or case, error.
"""
import asyncio, json, ssl, sys, time

try:
    import aioapns.connection
    from aioapns import APNs, NotificationRequest
except ImportError as e:
    print("aioapns is not installed (%s); scripts/setup installs it" % e, file=sys.stderr)
    sys.exit(3)

spec = json.loads(sys.argv[1])


class ShiftedClock:
    offset = 0.0
    def time(self): return time.time() + self.offset
    def __getattr__(self, name): return getattr(time, name)


clock = ShiftedClock()
aioapns.connection.time = clock


def context(alpn):
    ctx = ssl.create_default_context(cafile=spec["cafile"])
    if alpn:
        ctx.set_alpn_protocols(["h2"])
    return ctx


async def quiet(request, result):
    pass


async def main():
    loop = asyncio.get_running_loop()
    connect = loop.create_connection
    selected = []

    async def to_gateway(protocol_factory, host=None, port=None, **kw):
        if host in ("api.push.apple.com", "api.development.push.apple.com") and port == 443:
            kw.setdefault("server_hostname", host)
            host, port = "127.0.0.1", spec["port"]
        transport, protocol = await connect(protocol_factory, host=host, port=port, **kw)
        selected.append(transport.get_extra_info("ssl_object").selected_alpn_protocol())
        return transport, protocol

    loop.create_connection = to_gateway

    for c in spec["clients"]:
        clock.offset = c.get("clock_offset", 0)
        options = dict(topic=spec["topic"], max_connections=1, err_func=quiet, ssl_context=context(c.get("alpn", True)))
        if "key" in c:
            with open(c["key"]) as f:
                client = APNs(key=f.read(), key_id=spec["key_id"], team_id=spec["team_id"], **options)
        else:
            client = APNs(client_cert=c["cert"], **options)
        for p in c["pushes"]:
            clock.offset = p.get("clock_offset", clock.offset)
            message = spec["reference"] if "payload_bytes" not in p else {"aps": {"alert": "x" * p["payload_bytes"]}}
            request = NotificationRequest(device_token=p.get("token", spec["token"]), message=message)
            name = c["name"] + "/" + p.get("name", "push")
            try:
                r = await asyncio.wait_for(client.send_notification(request), 20)
                out = {"case": name, "status": r.status, "reason": r.description, "timestamp": r.timestamp,
                       "apns_id_echoed": r.notification_id == request.notification_id, "alpn": selected[-1]}
            except Exception as e:
                out = {"case": name, "error": "%s: %s" % (type(e).__name__, e)}
            print(json.dumps(out), flush=True)
        client.pool.close()


asyncio.run(main())
"""#
