# NixOS VM test of services.cuzk (pkgs.testers.runNixOSTest), in the socket-activated
# pattern: the socket listens and the service is inactive after boot; the first client call
# starts it; busctl reads its state and the bus refuses a state change from a stranger;
# a 2 KiB PoRep proof completes on the CPU backend and the metrics endpoint (its own socket
# unit) counts it; journald holds its structured fields.
# The fixture (test parameters and a sealed 2 KiB sector) is built once as a derivation.
{ nixosModule }:
{ pkgs, lib, ... }:

let
  cuzk = pkgs.cuzk;
  # The lab (crate cuzk-bench, binary cuzk-lab) makes the fixture; it is never installed.
  cuzkLab = cuzk.overrideAttrs (old: {
    pname = "cuzk-lab";
    cargoBuildFlags = [
      "-p"
      "cuzk-bench"
    ];
    postInstall = "";
  });
  fixture = pkgs.runCommand "cuzk-fixture-2KiB" { nativeBuildInputs = [ cuzkLab ]; } ''
    export HOME=$TMPDIR
    cuzk-lab gen-fixture --sector-size 2KiB --out $out
  '';
  obj = "org.cuzk.Prover1 /org/cuzk/Prover1 org.cuzk.Prover1";
in
{
  name = "cuzk";
  # The node sets nixpkgs.config (CUDA is unfree), so it imports nixpkgs itself; the module
  # itself works with read-only pkgs (its package comes from the flake, not an overlay).
  node.pkgsReadOnly = false;

  nodes.machine =
    { config, ... }:
    {
      imports = [ nixosModule ];
      # CUDA's toolkit (nvcc, for the kernels) is unfree.
      nixpkgs.config.allowUnfree = true;
      virtualisation.memorySize = 4096;
      virtualisation.cores = 2;

      services.cuzk = {
        enable = true;
        # No GPU in the VM: the default CUDA build, proving on the CPU.
        paramDir = "${fixture}/params";
        hostMemoryBudget = 2 * 1024 * 1024 * 1024;
        settings = {
          gpus.backend = "cpu";
          srs.parent_cache = "${fixture}/parents";
        };
        metrics.enable = true;
      };

      users.users.stranger.isNormalUser = true;
      users.users.curio = {
        isSystemUser = true;
        group = "curio";
        extraGroups = [ "cuzk" ];
      };
      users.groups.curio = { };
    };

  testScript = ''
    machine.wait_for_unit("sockets.target")

    with subtest("socket listens, service waits"):
        machine.succeed("systemctl is-active cuzk.socket")
        machine.succeed("test -S /run/cuzk/cuzk.sock")
        machine.succeed("stat -c '%G %a' /run/cuzk/cuzk.sock | grep -x 'cuzk 660'")
        machine.fail("systemctl is-active cuzk.service")

    with subtest("the first client call starts the daemon"):
        machine.succeed("cuzk-bench status | grep '^uptime'")
        machine.wait_for_unit("cuzk.service")
        machine.succeed("systemctl show -p StatusText --value cuzk.service | grep queued")

    with subtest("the socket refuses a stranger and admits group cuzk"):
        machine.fail("su -s /bin/sh stranger -c 'cuzk-bench status'")
        machine.succeed("setpriv --reuid=curio --regid=curio --init-groups cuzk-bench status")

    with subtest("busctl reads the daemon's state; the bus refuses a stranger's Pause"):
        machine.succeed("busctl --system introspect ${obj} | grep -E '\\.Pause +method'")
        machine.succeed("busctl --system get-property ${obj} State | grep -x 's \"ready\"'")
        machine.succeed("busctl --system get-property ${obj} Version | grep '^s '")
        machine.fail("su -s /bin/sh stranger -c 'busctl --system call ${obj} Pause'")
        machine.succeed("setpriv --reuid=curio --regid=curio --init-groups busctl --system call ${obj} Pause")
        machine.succeed("busctl --system get-property ${obj} State | grep -x 's \"paused\"'")
        machine.succeed("busctl --system call ${obj} Resume")

    with subtest("a 2 KiB PoRep proof completes on the CPU backend"):
        machine.succeed(
            "cuzk-bench single --c1 ${fixture}/c1.envelope.json --request-id vm-1"
            " | grep '^vm-1 COMPLETED'",
            timeout=900,
        )
        machine.succeed("busctl --system get-property ${obj} ProofsCompleted | grep -x 't 1'")

    with subtest("cuzk-metrics.socket serves /metrics from the daemon"):
        machine.succeed("systemctl is-active cuzk-metrics.socket")
        machine.succeed(
            "curl -sf http://127.0.0.1:9821/metrics"
            " | grep -x 'cuzk_proofs_completed_total{proof_kind=\"porep-c2\"} 1'"
        )

    with subtest("journald holds the structured fields"):
        out = machine.succeed("journalctl _SYSTEMD_UNIT=cuzk.service JOB_ID=vm-1 -o verbose")
        for field in ["PROOF_KIND=", "STAGE="]:
            assert field in out, f"no {field} in cuzkd's journal records for job vm-1"

    with subtest("hardening"):
        out = machine.succeed("systemd-analyze security cuzk.service | tail -1")
        level = float(out.split("level for cuzk.service:")[1].split()[0])
        assert level <= 2.0, f"exposure {level} above 2.0"
  '';
}
