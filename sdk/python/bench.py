"""What the SDK costs over a bare request: the median latency of ``Sandbox.read_file`` against
the same GET sent with http.client on one kept-alive connection, measured in the same run,
interleaved so that a busy machine slows both alike.

    sandboxerd serve &
    PYTHONPATH=sdk/python python3 sdk/python/bench.py [--url URL] [-n 1000] [--size 1024]
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import time
from urllib.parse import quote, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sandboxer import Client  # noqa: E402


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("SANDBOXER_URL", "http://127.0.0.1:7878"))
    ap.add_argument("--token", default=os.environ.get("SANDBOXER_TOKEN", ""))
    ap.add_argument("-n", type=int, default=1000, help="requests of each kind")
    ap.add_argument("--size", type=int, default=1024, help="bytes of the file read")
    args = ap.parse_args()

    u = urlsplit(args.url)
    if u.scheme != "http":
        sys.exit("bench.py compares against a raw http:// connection: give an http:// URL")
    data = os.urandom(args.size)
    with Client(args.url, token=args.token) as c, c.create_sandbox() as sb:
        sb.write_file("bench.bin", data)
        raw = http.client.HTTPConnection(u.hostname, u.port)
        headers = {"Authorization": "Bearer " + args.token} if args.token else {}
        path = f"/v1/sandboxes/{sb.id}/files?path={quote('bench.bin')}"

        def raw_read():
            raw.request("GET", path, headers=headers)
            r = raw.getresponse()
            body = r.read()
            if r.status != 200:
                sys.exit(f"raw GET: {r.status} {body[:200]!r}")
            return body

        assert sb.read_file("bench.bin") == data and raw_read() == data  # warm both connections
        sdk_ms, raw_ms = [], []
        for _ in range(args.n):
            t = time.perf_counter()
            sb.read_file("bench.bin")
            sdk_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            raw_read()
            raw_ms.append((time.perf_counter() - t) * 1000)
        raw.close()

    sdk_med, raw_med = statistics.median(sdk_ms), statistics.median(raw_ms)
    print(
        json.dumps(
            {
                "adapter": sb.adapter,
                "n": args.n,
                "bytes": args.size,
                "sdk_read_file_ms": {"median": round(sdk_med, 3), "p99": round(percentile(sdk_ms, 0.99), 3)},
                "raw_http_client_ms": {"median": round(raw_med, 3), "p99": round(percentile(raw_ms, 0.99), 3)},
                "sdk_over_raw": round(sdk_med / raw_med, 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
