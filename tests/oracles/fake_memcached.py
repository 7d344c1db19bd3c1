#!/usr/bin/env python3
"""Fake memcached backends for nutcracker_oracle.py: one process, one listener per
ADDR (loopback only), each answering `get KEY` with `VALUE KEY 0 N` whose data is its
own ADDR. Bounded: it exits after --max-requests gets or --seconds, whichever comes
first, and when its parent's stdin closes.

    python3 fake_memcached.py --seconds 60 --max-requests 100000 127.0.0.2:11211 ...
It prints "ready" once every listener is bound (or "bind-failed ADDR" and exits 3).
"""

import argparse
import asyncio
import os
import sys


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--max-requests", type=int, default=100000)
    p.add_argument("addrs", nargs="+")
    args = p.parse_args()
    served = 0
    done = asyncio.Event()

    def handler_for(addr):
        tag = addr.encode()

        async def handle(reader, writer):
            nonlocal served
            try:
                while not done.is_set():
                    line = await reader.readuntil(b"\r\n")
                    served += 1
                    if served > args.max_requests:
                        done.set()
                        break
                    parts = line[:-2].split(b" ")
                    if parts[0] == b"get" and len(parts) >= 2:
                        out = b"".join(b"VALUE " + k + b" 0 " + str(len(tag)).encode() +
                                       b"\r\n" + tag + b"\r\n" for k in parts[1:])
                        writer.write(out + b"END\r\n")
                    elif parts[0] in (b"version",):
                        writer.write(b"VERSION fake\r\n")
                    else:
                        writer.write(b"ERROR\r\n")
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
                pass
            finally:
                writer.close()
        return handle

    servers = []
    for addr in args.addrs:
        host, _, port = addr.rpartition(":")
        if not host.startswith("127."):
            print(f"refused {addr}: loopback only", flush=True)
            sys.exit(2)
        try:
            servers.append(await asyncio.start_server(handler_for(addr), host, int(port),
                                                      reuse_address=True))
        except OSError:
            print(f"bind-failed {addr}", flush=True)
            sys.exit(3)
    print("ready", flush=True)

    async def watch_stdin():
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        done.set()

    asyncio.ensure_future(watch_stdin())
    try:
        await asyncio.wait_for(done.wait(), timeout=args.seconds)
    except asyncio.TimeoutError:
        pass
    for s in servers:
        s.close()
    sys.stdout.flush()
    os._exit(0)  # the stdin watcher thread may still be blocked in read()


if __name__ == "__main__":
    asyncio.run(main())
