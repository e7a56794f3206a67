"""A Python grpcio client against cuzkd's unix socket (run by python-client.sh).

gRPC's C core (Python, C++, Ruby, PHP), grpc-java and grpc-dotnet send the socket's path
(grpc core: percent-encoded, "run%2Fcuzk%2Fcuzk.sock") as the HTTP/2 :authority when the
target is a unix socket; the HTTP/2 library under tonic (h2) refuses such a request with
RST_STREAM(PROTOCOL_ERROR) before cuzkd sees it. With the channel option
grpc.default_authority = "localhost" (what grpc-go and cuzk's own Rust clients send) the same
client works. This checks both, then proves a 2 KiB WinningPoSt through Prove when a fixture
is given.

usage: python_client.py --socket PATH --stubs DIR [--daemon-log LOG] [--winning kinds/winning.json]
"""

import argparse
import base64
import json
import os
import sys
import time

LOCALHOST = [("grpc.default_authority", "localhost")]

passed = 0
failed = []


def check(name, ok, detail=""):
    global passed
    if ok:
        passed += 1
        print(f"ok    {name}" + (f": {detail}" if detail else ""))
    else:
        failed.append(name)
        print(f"FAIL  {name}" + (f": {detail}" if detail else ""))
    sys.stdout.flush()


class HandStubs:
    """What proving_pb2_grpc gives for the calls made here, through the generic API."""

    def __init__(self, grpc, pb):
        self.pb = pb

    def ProvingEngineStub(self, channel):
        pb = self.pb

        class Stub:
            pass

        stub = Stub()
        for name, req, resp in [("GetStatus", pb.GetStatusRequest, pb.GetStatusResponse),
                                ("Prove", pb.ProveRequest, pb.ProveResponse)]:
            setattr(stub, name, channel.unary_unary(f"/cuzk.v1.ProvingEngine/{name}",
                                                    request_serializer=req.SerializeToString,
                                                    response_deserializer=resp.FromString))
        return stub


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--stubs", required=True, help="where grpc_tools.protoc wrote cuzk/v1/*_pb2*.py")
    ap.add_argument("--daemon-log", help="cuzkd's log with h2=debug: names the refused authority")
    ap.add_argument("--winning", help="the 2 KiB fixture's kinds/winning.json (omit: no proof)")
    args = ap.parse_args()

    sys.path.insert(0, args.stubs)
    import grpc
    from cuzk.v1 import proving_pb2 as pb
    try:
        from cuzk.v1 import proving_pb2_grpc as pb_grpc
    except ImportError:
        # Messages only (plain protoc, no grpc_tools on this host): the calls by hand.
        pb_grpc = HandStubs(grpc, pb)

    print(f"grpcio {grpc.__version__}, socket {args.socket}")
    # Both spellings of a unix target grpc accepts: unix:PATH and unix://ABSOLUTE_PATH.
    targets = [f"unix:{args.socket}", f"unix://{args.socket}"]

    # (a) Default options: refused by h2 (a stream reset, never an answer from cuzkd).
    for target in targets:
        with grpc.insecure_channel(target) as ch:
            stub = pb_grpc.ProvingEngineStub(ch)
            try:
                r = stub.GetStatus(pb.GetStatusRequest(), timeout=15)
                check(f"default authority on {target} is refused", False,
                      f"GetStatus answered (uptime {r.uptime_seconds}s): h2 accepts it now; "
                      "update README.md's note on non-Go/Rust clients and this test")
            except grpc.RpcError as e:
                text = f"{e.code().name}: {e.details()}"
                # grpcio reports the reset as INTERNAL or UNAVAILABLE, naming the HTTP/2 error.
                expected = e.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE) and (
                    "PROTOCOL_ERROR" in text.upper() or "RST_STREAM" in text.upper() or "PROTOCOL ERROR" in text.upper()
                )
                check(f"default authority on {target} is refused", expected, text)

    # ... by h2's :authority check (cuzkd logs h2 at debug for this test), not something else.
    if args.daemon_log:
        lines = []
        for _ in range(50):
            with open(args.daemon_log, errors="replace") as f:
                lines = [l.strip() for l in f if "malformed authority" in l]
            if len(lines) >= len(targets):
                break
            time.sleep(0.1)
        check("h2 names the path as a malformed :authority", len(lines) >= len(targets),
              lines[0].split("h2::server: ", 1)[-1] if lines else "no 'malformed authority' in cuzkd's log")

    # (b) grpc.default_authority = localhost: answered.
    for target in targets:
        with grpc.insecure_channel(target, options=LOCALHOST) as ch:
            stub = pb_grpc.ProvingEngineStub(ch)
            try:
                r = stub.GetStatus(pb.GetStatusRequest(), timeout=15)
                check(f"GetStatus on {target} with grpc.default_authority=localhost", True,
                      f"uptime {r.uptime_seconds}s, {len(r.gpus)} GPU(s), {len(r.queues)} queue(s)")
            except grpc.RpcError as e:
                check(f"GetStatus on {target} with grpc.default_authority=localhost", False,
                      f"{e.code().name}: {e.details()}")

    if args.winning:
        with open(args.winning) as f:
            k = json.load(f)
        randomness = base64.b64decode(k["randomness"])
        submit = pb.SubmitProofRequest(
            request_id=f"python-winpost-{k['miner_id']}-{randomness[:8].hex()}-{os.getpid()}",
            proof_kind=pb.WINNING_POST,
            registered_proof=k["registered_proof"],
            vanilla_proofs=[base64.b64decode(v) for v in k["vanilla_proofs"]],
            randomness=randomness,
            miner_id=k["miner_id"],
        )
        name = "Prove(WinningPoSt, 2 KiB) with grpc.default_authority=localhost"
        with grpc.insecure_channel(targets[0], options=LOCALHOST) as ch:
            stub = pb_grpc.ProvingEngineStub(ch)
            t0 = time.monotonic()
            try:
                r = stub.Prove(pb.ProveRequest(submit=submit), timeout=600).result
                status = pb.AwaitProofResponse.Status.Name(r.status)
                check(name, r.status == pb.AwaitProofResponse.COMPLETED and len(r.proof) == 192,
                      f"{status}, {len(r.proof)}-byte proof in {time.monotonic() - t0:.1f}s"
                      + (f", error: {r.error_message}" if r.error_message else ""))
            except grpc.RpcError as e:
                check(name, False, f"{e.code().name}: {e.details()}")
    else:
        print("skip  Prove(WinningPoSt): no 2 KiB fixture (kinds/winning.json); GetStatus alone is the test")

    print(f"{passed} passed, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
