# services.cuzk: the cuzk proving daemon as a socket-activated, hardened systemd service.
#
# The units, D-Bus policy and tmpfiles snippet come from the package (systemd/ in the
# repository, installed as shipped); this module adds what differs per host on top of them:
# the CUDA version the package is built with, the GPUs and their memory budgets, the host
# memory budgets, where the parameters are, the socket, an optional TCP listener. Everything
# else is `settings`, written as /etc/cuzk/cuzk.toml (README "Configuration").
{
  config,
  options,
  lib,
  pkgs,
  ...
}:

let
  inherit (lib)
    mkOption
    mkEnableOption
    mkIf
    types
    literalExpression
    optional
    optionalAttrs
    ;

  cfg = config.services.cuzk;
  settingsFormat = pkgs.formats.toml { };

  # The one writable place under the unit's ProtectSystem=strict (StateDirectory=cuzk).
  stateDir = "/var/lib/cuzk";
  # The TCP listener's certificate, key, CA and token reach the daemon as systemd credentials
  # (LoadCredential=, read by systemd as root): the originals may be root's alone, and
  # ProtectHome= or PrivateTmp= do not hide them. cuzkd reads them here, once, at start.
  credentialDir = "/run/credentials/cuzk.service";
  tcpFiles = lib.filterAttrs (_: f: f.path != null) {
    tls_cert = { path = cfg.tcp.tls.certFile; option = "tcp.tls.certFile"; credential = "tcp-tls-cert"; };
    tls_key = { path = cfg.tcp.tls.keyFile; option = "tcp.tls.keyFile"; credential = "tcp-tls-key"; secret = true; };
    tls_client_ca = { path = cfg.tcp.tls.clientCaFile; option = "tcp.tls.clientCaFile"; credential = "tcp-tls-client-ca"; };
    token_file = { path = cfg.tcp.tokenFile; option = "tcp.tokenFile"; credential = "tcp-token"; secret = true; };
  };
  tcpAuthenticated = cfg.tcp.tokenFile != null || cfg.tcp.tls.clientCaFile != null;
  tcpAuthSet = tcpFiles != { } || cfg.tcp.insecure;
  defaultParamDir = "/var/tmp/filecoin-proof-parameters";

  gpuType = types.submodule {
    options = {
      ordinal = mkOption {
        type = types.ints.unsigned;
        example = 0;
        description = "CUDA device ordinal of the GPU (as `nvidia-smi -L` numbers them).";
      };
      vramBudget = mkOption {
        type = types.nullOr types.ints.positive;
        default = null;
        example = literalExpression "60 * 1024 * 1024 * 1024";
        description = ''
          Bytes of this GPU's memory cuzk may hold (its VRAM arena). `null`: the GPU's free
          memory at start, less a reserve. Lower it on a GPU shared with other work.
        '';
      };
      workersPerDevice = mkOption {
        type = types.nullOr types.ints.positive;
        default = null;
        example = 2;
        description = ''
          Proving workers on this GPU (the kernel region is under a per-device lock; a second
          worker overlaps its CPU stages). `null`: `settings.gpus.gpu_workers_per_device` (1).
        '';
      };
    };
  };

  # Typed options -> config keys. A GPU entry is a plain ordinal unless it carries a budget
  # or a worker count.
  gpuEntry =
    g:
    { inherit (g) ordinal; }
    // optionalAttrs (g.vramBudget != null) { vram_budget_bytes = g.vramBudget; }
    // optionalAttrs (g.workersPerDevice != null) { workers = g.workersPerDevice; };
  gpusHaveDetail = lib.any (g: g.vramBudget != null || g.workersPerDevice != null) cfg.gpus;

  typedSettings = {
    daemon = {
      listen = "unix://${cfg.socket.path}";
      state_dir = stateDir;
    }
    // optionalAttrs tcpAuthSet {
      tcp =
        lib.mapAttrs (_: f: "${credentialDir}/${f.credential}") tcpFiles
        // optionalAttrs cfg.tcp.insecure { insecure = true; };
    };
    srs.param_cache = cfg.paramDir;
  }
  // optionalAttrs (cfg.gpus != [ ] || cfg.pinnedMemoryBudget != null) {
    gpus =
      optionalAttrs (cfg.gpus != [ ]) {
        devices = if gpusHaveDetail then map gpuEntry cfg.gpus else map (g: g.ordinal) cfg.gpus;
      }
      // optionalAttrs (cfg.pinnedMemoryBudget != null) {
        pinned_memory_budget_bytes = cfg.pinnedMemoryBudget;
      };
  }
  // optionalAttrs (cfg.hostMemoryBudget != null) {
    engine.host_memory_budget_bytes = cfg.hostMemoryBudget;
  };

  # `settings` is a freeform submodule: its typed keys are null when unset, and TOML has no
  # null, so they are dropped (with a table they leave empty) before the file is written.
  dropNulls =
    attrs:
    lib.concatMapAttrs (
      k: v:
      if v == null then
        { }
      else if builtins.isAttrs v && !lib.isDerivation v then
        let
          kept = dropNulls v;
        in
        if kept == { } && v != { } then { } else { ${k} = kept; }
      else
        { ${k} = v; }
    ) attrs;
  finalSettings = lib.recursiveUpdate (dropNulls cfg.settings) typedSettings;
  configFile = settingsFormat.generate "cuzk.toml" finalSettings;
  # What cuzkd puts in force only at start (README "Live reload"): a change here restarts the
  # service on switch; any other change of the file reloads it, without dropping a job.
  withoutKeys = keys: a: if builtins.isAttrs a then removeAttrs a keys else a;
  restartOnlySettings = {
    daemon = withoutKeys [ "drain_timeout_secs" ] (finalSettings.daemon or { });
    srs = withoutKeys [ "cache_limit_bytes" "pinned" ] (finalSettings.srs or { });
    gpus = (withoutKeys [ "gpu_workers_per_device" "devices" ] (finalSettings.gpus or { })) // {
      devices = map (withoutKeys [ "workers" ]) ((finalSettings.gpus or { }).devices or [ ]);
    };
    dbus = finalSettings.dbus or { };
    log = withoutKeys [ "level" ] (finalSettings.log or { });
  };

  # Keys a typed option owns: setting them in `settings` as well is a contradiction.
  ownedKeys = [
    {
      path = [ "daemon" "listen" ];
      option = "services.cuzk.socket.path (and services.cuzk.tcp)";
    }
    {
      path = [ "srs" "param_cache" ];
      option = "services.cuzk.paramDir";
    }
    {
      path = [ "gpus" "devices" ];
      option = "services.cuzk.gpus";
      onlyIf = cfg.gpus != [ ];
    }
    {
      path = [ "engine" "host_memory_budget_bytes" ];
      option = "services.cuzk.hostMemoryBudget";
      onlyIf = cfg.hostMemoryBudget != null;
    }
    {
      path = [ "daemon" "tcp" ];
      option = "services.cuzk.tcp.tokenFile, tcp.tls and tcp.insecure";
      onlyIf = tcpAuthSet;
    }
    {
      path = [ "gpus" "pinned_memory_budget_bytes" ];
      option = "services.cuzk.pinnedMemoryBudget";
      onlyIf = cfg.pinnedMemoryBudget != null;
    }
  ];
  settingAt = path: lib.attrByPath path null cfg.settings;

  ordinals = map (g: g.ordinal) cfg.gpus;
  # One pinned pool per GPU (device 0 alone when none is listed).
  pinnedPools = lib.max 1 (builtins.length cfg.gpus);
  underAny = dirs: p: lib.any (d: p == d || lib.hasPrefix "${d}/" p) dirs;
  backend = settingAt [ "gpus" "backend" ];

  # ListenStream= takes an IPv6 address in brackets: "::" with the port appended, ":::9820",
  # is refused by systemd, which logs it and skips the entry (the socket then listens on the
  # unix path alone). An address given in brackets stays as it is.
  listenOn = a: port: "${if lib.hasInfix ":" a && !lib.hasPrefix "[" a then "[${a}]" else a}:${toString port}";
  tcpListen = listenOn cfg.tcp.address cfg.tcp.port;
  metricsListen = listenOn cfg.metrics.listenAddress cfg.metrics.port;

  # SIGTERM starts the drain: the unit must wait for it, plus a margin for the daemon to
  # leave the unfinished work in the spool and exit (cuzkd's default drain is 60 s; the
  # shipped unit's TimeoutStopSec=90s is that plus the same margin).
  drainTimeout = settingAt [ "daemon" "drain_timeout_secs" ];
  timeoutStopSec = (if drainTimeout == null then 60 else drainTimeout) + 30;

  # GPUs need NVIDIA's driver, which on NixOS comes from hardware.nvidia: it puts libcuda in
  # /run/opengl-driver/lib and the nvidia and nvidia_uvm modules in the kernel's module tree.
  # nixpkgs since 24.11 says whether it is on in hardware.nvidia.enabled (read-only: "nvidia"
  # in services.xserver.videoDrivers, or hardware.nvidia.datacenter.enable); older ones are
  # asked the same two questions directly. Setting hardware.nvidia.package alone does not turn
  # the driver on. Every lookup is guarded, so this evaluates where an option is missing.
  nvidiaDriver =
    if options ? hardware.nvidia.enabled then
      config.hardware.nvidia.enabled
    else
      lib.any (d: lib.hasPrefix "nvidia" d) (
        lib.attrByPath [ "services" "xserver" "videoDrivers" ] [ ] config
      )
      || lib.attrByPath [ "hardware" "nvidia" "datacenter" "enable" ] false config;
  wantsGpu = cfg.gpus != [ ] || backend == "gpu";

  # crates/cuzk-gpu/build.rs calls nvcc with --compress-mode=size, an option nvcc has had
  # since CUDA 12.8 (older ones stop the build with "Unknown option"). build.rs has no switch
  # for it, so the CUDA set is checked here. nixpkgs names the version cudaMajorMinorVersion
  # (and cudaVersion in older releases); a set that names neither is not judged.
  minCudaVersion = "12.8";
  cudaVersion =
    cfg.cudaPackages.cudaMajorMinorVersion or cfg.cudaPackages.cudaVersion
      or (cfg.cudaPackages.cuda_nvcc.version or null);
in
{
  options.services.cuzk = {
    enable = mkEnableOption "cuzk, the GPU Groth16 proving daemon for Filecoin (socket-activated)";

    package = mkOption {
      type = types.package;
      # The flake's nixosModules.default sets this (mkDefault) to the flake's own
      # packages.<system>.cuzk, so a host whose pkgs is read-only (nixpkgs.pkgs, where
      # overlays are ignored) needs no overlay; pkgs.cuzk is used where an overlay added it.
      default =
        pkgs.cuzk or (throw "services.cuzk.package: pkgs has no cuzk. Import cuzk's flake module (nixosModules.default, which sets this option to the flake's packages.<system>.cuzk), apply its overlays.default, or set services.cuzk.package.");
      defaultText = lib.literalMD "the flake's `packages.<system>.cuzk` (set by its `nixosModules.default`), else `pkgs.cuzk`";
      description = ''
        The cuzk package (daemon, client, units). Built again with `cudaPackages`, see
        `finalPackage`.
      '';
    };

    cudaPackages = mkOption {
      type = types.attrs;
      # Pinned, not nixpkgs' floating default: a nixpkgs update must not change the CUDA
      # version (and the driver it needs) under a proving host.
      default = pkgs.cudaPackages_12_8;
      defaultText = literalExpression "pkgs.cudaPackages_12_8";
      example = literalExpression "pkgs.cudaPackages_12_8";
      description = ''
        The CUDA package set cuzk's kernels are compiled with: this pins the host's CUDA
        version. The package is rebuilt with it (`package.override { cudaPackages = ...; }`).
        Pick one the host's NVIDIA driver supports (the driver must be at least as new as
        the CUDA version). GPU architectures follow `nixpkgs.config.cudaCapabilities`.
      '';
    };

    finalPackage = mkOption {
      type = types.package;
      readOnly = true;
      default =
        if cfg.package ? override then
          cfg.package.override { inherit (cfg) cudaPackages; }
        else
          cfg.package;
      defaultText = literalExpression "config.services.cuzk.package.override { inherit (config.services.cuzk) cudaPackages; }";
      description = "The package the service runs: `package` built with `cudaPackages`.";
    };

    gpus = mkOption {
      type = types.listOf gpuType;
      default = [ ];
      example = literalExpression ''
        [
          { ordinal = 0; vramBudget = 70 * 1024 * 1024 * 1024; workersPerDevice = 2; }
          { ordinal = 1; vramBudget = 20 * 1024 * 1024 * 1024; }
        ]
      '';
      description = ''
        The GPUs cuzk proves on, each with its own memory budget and worker count. Empty:
        device 0 with the defaults (or the CPU, per `settings.gpus.backend`). Setting any GPU
        loads the nvidia_uvm kernel module at boot: the unit admits the NVIDIA devices that
        exist when it starts and cannot load modules itself. GPUs need the NVIDIA driver
        (`services.xserver.videoDrivers = [ "nvidia" ]` or `hardware.nvidia.datacenter.enable`).
      '';
    };

    hostMemoryBudget = mkOption {
      type = types.nullOr types.ints.positive;
      default = null;
      example = literalExpression "384 * 1024 * 1024 * 1024";
      description = ''
        Bytes of host memory that proof partitions (synthesized, waiting or proving), their
        jobs and resident parameters may hold together
        (`[engine] host_memory_budget_bytes`). `null`: three quarters of RAM.
      '';
    };

    pinnedMemoryBudget = mkOption {
      type = types.nullOr types.ints.positive;
      default = null;
      example = literalExpression "64 * 1024 * 1024 * 1024";
      description = ''
        Bytes of page-locked (pinned) host memory each GPU's transfer pool may hold
        (`[gpus] pinned_memory_budget_bytes`; at least 128 MiB, its four staging buffers:
        two for uploads, two for downloads).
        All GPUs' pools together must fit in the host memory budget. `null`: the daemon's
        default, 256 MiB per GPU.
      '';
    };

    paramDir = mkOption {
      type = types.path;
      default = defaultParamDir;
      description = ''
        Directory of the Groth16 parameter files (`.params` and `.vk`, Filecoin's naming), as
        `paramfetch` fills it. Read-only to the service.
      '';
    };

    socket = {
      path = mkOption {
        type = types.path;
        default = "/run/cuzk/cuzk.sock";
        description = "The unix socket clients connect to (Curio's `[Cuzk] Address` is `unix://` this).";
      };
      group = mkOption {
        type = types.str;
        default = "cuzk";
        description = ''
          Group that may connect to the socket (mode 0660). Add Curio's user to it. The D-Bus
          policy's state-changing methods are for group cuzk and root.
        '';
      };
    };

    tcp = {
      enable = mkEnableOption ''
        a TCP listener besides the unix socket (another ListenStream= of cuzk.socket). It needs
        client authentication, `tcp.tokenFile` or `tcp.tls` with `clientCaFile`, or else
        `tcp.insecure`; the unix socket stays governed by its mode and `socket.group`'';
      address = mkOption {
        type = types.str;
        default = "0.0.0.0";
        example = "10.0.0.5";
        description = ''
          Address to listen on: IPv4, or IPv6 (`"::"` for every address, both families;
          brackets are added for the socket unit, e.g. `[fd00::5]:9820`).
        '';
      };
      port = mkOption {
        type = types.port;
        default = 9820;
        description = "TCP port to listen on.";
      };
      tokenFile = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "/run/keys/cuzk-token";
        description = ''
          File holding the bearer token every call over TCP must carry
          (`authorization: Bearer <token>`; cuzk-bench reads it from `CUZK_TOKEN_FILE`), one
          word, e.g. from `openssl rand -hex 32`. A path as a string, so that the secret never
          enters the Nix store; it may be readable by root alone (systemd passes it as a
          credential). `[daemon.tcp] token_file`.
        '';
      };
      tls = {
        certFile = mkOption {
          type = types.nullOr types.str;
          default = null;
          example = "/var/lib/acme/prover.example/cert.pem";
          description = "PEM certificate chain the TCP listener presents (TLS; `[daemon.tcp] tls_cert`).";
        };
        keyFile = mkOption {
          type = types.nullOr types.str;
          default = null;
          example = "/var/lib/acme/prover.example/key.pem";
          description = ''
            PEM private key of `certFile`, a path as a string (kept out of the Nix store); it may
            be readable by root alone. `[daemon.tcp] tls_key`.
          '';
        };
        clientCaFile = mkOption {
          type = types.nullOr types.str;
          default = null;
          example = "/etc/cuzk/clients-ca.pem";
          description = ''
            PEM CA certificate: every TCP client must present a certificate it signed
            (`[daemon.tcp] tls_client_ca`). Needs `certFile` and `keyFile`.
          '';
        };
      };
      insecure = mkOption {
        type = types.bool;
        default = false;
        description = ''
          Serve TCP without client authentication: anyone who can reach the port may submit
          proofs (`[daemon.tcp] insecure`; cuzkd logs a warning). For a network you trust.
        '';
      };
    };

    openFirewall = mkOption {
      type = types.bool;
      default = false;
      description = "Open `tcp.port` in the firewall.";
    };

    metrics = {
      enable = mkEnableOption ''
        the Prometheus scrape endpoint, `GET /metrics` over HTTP: a socket unit of its own
        (cuzk-metrics.socket, `FileDescriptorName=metrics`) that systemd binds in the host's
        network and passes to cuzkd, which runs without a network of its own. The endpoint
        has no authentication: it shows the host's load and job counts to whoever reaches it'';
      listenAddress = mkOption {
        type = types.str;
        default = "127.0.0.1";
        example = "::";
        description = ''
          Address the endpoint listens on. The default serves a Prometheus (or agent) on this
          host; give the management network's address, or `::`/`0.0.0.0`, for a central one.
        '';
      };
      port = mkOption {
        type = types.port;
        default = 9821;
        description = "TCP port of the endpoint (the gRPC TCP listener's default is 9820).";
      };
      openFirewall = mkOption {
        type = types.bool;
        default = false;
        description = "Open `metrics.port` in the firewall.";
      };
    };

    settings = mkOption {
      # RFC 42: any key passes through to cuzk.toml (cuzkd refuses an unknown one by name);
      # the keys this module reads itself are typed and documented here.
      type = types.submodule {
        freeformType = settingsFormat.type;
        options = {
          gpus.backend = mkOption {
            type = types.nullOr (
              types.enum [
                "auto"
                "gpu"
                "cpu"
              ]
            );
            default = null;
            example = "gpu";
            description = ''
              `[gpus] backend`: `"gpu"` fails loudly when a listed GPU is missing, `"cpu"`
              proves on the CPU alone, `"auto"` uses the GPUs that are usable and otherwise
              the CPU (said in the log). `null`: the daemon's default, `"auto"`. `"gpu"`, like
              listing `gpus`, needs the NVIDIA driver (`hardware.nvidia`).
            '';
          };
          daemon.drain_timeout_secs = mkOption {
            type = types.nullOr (types.ints.between 0 (7 * 86400));
            default = null;
            example = 300;
            description = ''
              `[daemon] drain_timeout_secs`: on stop (SIGTERM), how long running work may
              take to finish before it is left in the spool for the next start. `null`: the
              daemon's default, 60. The unit's `TimeoutStopSec=` follows it, 30 s longer.
            '';
          };
        };
      };
      default = { };
      example = literalExpression ''
        {
          gpus.backend = "gpu";
          daemon.drain_timeout_secs = 120;
          engine.synthesis_workers = 8;
        }
      '';
      description = ''
        cuzkd's configuration, written to /etc/cuzk/cuzk.toml (see the README's
        "Configuration" table; an unknown key stops the daemon with its name). The typed
        options above fill their own keys: `[daemon] listen` and `state_dir`, `[srs]
        param_cache`, `[gpus] devices`, `[engine] host_memory_budget_bytes` and
        `pinned_memory_budget_bytes`. Keys left `null` are not written.
      '';
    };
  };

  config = mkIf cfg.enable {
    assertions =
      map (k: {
        assertion = !(k.onlyIf or true) || settingAt k.path == null;
        message = "services.cuzk.settings.${lib.concatStringsSep "." k.path} is set, but ${k.option} owns that key: set only the latter.";
      }) ownedKeys
      ++ [
        {
          assertion = lib.length (lib.unique ordinals) == lib.length ordinals;
          message = "services.cuzk.gpus lists a GPU ordinal more than once: ${toString ordinals}.";
        }
        {
          assertion = !(cfg.gpus != [ ] && backend == "cpu");
          message = ''services.cuzk.gpus lists GPUs but services.cuzk.settings.gpus.backend is "cpu": remove one of the two.'';
        }
        {
          assertion =
            cfg.pinnedMemoryBudget == null
            || cfg.hostMemoryBudget == null
            || cfg.pinnedMemoryBudget * pinnedPools <= cfg.hostMemoryBudget;
          message = "services.cuzk.pinnedMemoryBudget (${toString cfg.pinnedMemoryBudget} per GPU, ${toString pinnedPools} GPU(s)) exceeds services.cuzk.hostMemoryBudget (${toString cfg.hostMemoryBudget}): pinned memory is part of the host budget.";
        }
        {
          assertion = cfg.pinnedMemoryBudget == null || cfg.pinnedMemoryBudget >= 128 * 1024 * 1024;
          message = "services.cuzk.pinnedMemoryBudget (${toString cfg.pinnedMemoryBudget}) is below 128 MiB, the four staging buffers every GPU transfer goes through (two for uploads, two for downloads).";
        }
        {
          assertion = (settingAt [ "daemon" "state_dir" ]) == null;
          message = "services.cuzk.settings.daemon.state_dir cannot be moved: the service may write only ${stateDir} (StateDirectory=cuzk under ProtectSystem=strict).";
        }
        {
          assertion = !(underAny [ "/home" "/root" "/run/user" "/tmp" ] cfg.paramDir);
          message = "services.cuzk.paramDir = ${cfg.paramDir} is hidden from the service (ProtectHome=yes, PrivateTmp=yes): put the parameters elsewhere, e.g. ${defaultParamDir}.";
        }
        {
          assertion = lib.hasPrefix "/" cfg.socket.path;
          message = "services.cuzk.socket.path must be an absolute path, not ${cfg.socket.path}.";
        }
        {
          assertion = cfg.metrics.openFirewall -> cfg.metrics.enable;
          message = "services.cuzk.metrics.openFirewall opens the metrics port, but services.cuzk.metrics.enable is false: enable the endpoint or drop metrics.openFirewall.";
        }
        {
          # cuzkd runs with PrivateNetwork=yes: a port it binds itself is reachable by nobody.
          assertion = settingAt [ "metrics" "listen" ] == null;
          message = "services.cuzk.settings.metrics.listen would be bound inside the service's private network, where no scraper reaches it: use services.cuzk.metrics.enable (with listenAddress and port) instead.";
        }
        {
          assertion = !(cfg.metrics.enable && cfg.tcp.enable && cfg.metrics.port == cfg.tcp.port);
          message = "services.cuzk.metrics.port and services.cuzk.tcp.port are both ${toString cfg.tcp.port}: give the metrics endpoint another port.";
        }
        {
          assertion = cfg.openFirewall -> cfg.tcp.enable;
          message = "services.cuzk.openFirewall opens the TCP port, but services.cuzk.tcp.enable is false: enable the listener or drop openFirewall.";
        }
        {
          # (settings.daemon.tcp written by hand is left to the daemon's own check at start.)
          assertion = cfg.tcp.enable -> tcpAuthenticated || cfg.tcp.insecure || settingAt [ "daemon" "tcp" ] != null;
          message = "services.cuzk.tcp.enable without client authentication: set services.cuzk.tcp.tokenFile or services.cuzk.tcp.tls (certFile, keyFile, clientCaFile), or services.cuzk.tcp.insecure = true on a network you trust.";
        }
        {
          assertion = !(cfg.tcp.insecure && tcpAuthenticated);
          message = "services.cuzk.tcp.insecure = true contradicts services.cuzk.tcp.tokenFile or tcp.tls.clientCaFile, which authenticate every client: remove one.";
        }
        {
          assertion = (cfg.tcp.tls.certFile == null) == (cfg.tcp.tls.keyFile == null);
          message = "services.cuzk.tcp.tls.certFile and tcp.tls.keyFile go together: set both or neither.";
        }
        {
          assertion = cfg.tcp.tls.clientCaFile != null -> cfg.tcp.tls.certFile != null;
          message = "services.cuzk.tcp.tls.clientCaFile needs tcp.tls.certFile and tcp.tls.keyFile: client certificates are checked in the TLS handshake.";
        }
      ]
      ++ lib.concatMap (f: [
        {
          assertion = lib.hasPrefix "/" f.path;
          message = "services.cuzk.${f.option} must be an absolute path, not ${f.path}.";
        }
        {
          assertion = !(f.secret or false && lib.hasPrefix "${builtins.storeDir}/" f.path);
          message = "services.cuzk.${f.option} = ${f.path} is in the Nix store, which everyone can read: keep the secret outside it (a path as a string).";
        }
      ]) (lib.attrValues tcpFiles)
      ++ [
        {
          assertion = cfg.socket.group == "cuzk" || config.users.groups ? ${cfg.socket.group};
          message = "services.cuzk.socket.group = \"${cfg.socket.group}\" is not a group of this system (users.groups).";
        }
        {
          # An assertion, not a warning: without the driver the GPUs cannot be used at all
          # (/run/opengl-driver/lib has no libcuda) and nvidia_uvm, loaded at boot for
          # listed GPUs, is not found (systemd-modules-load fails); the fix is one line.
          assertion = wantsGpu -> nvidiaDriver;
          message = ''services.cuzk proves on NVIDIA GPUs (services.cuzk.gpus is set or settings.gpus.backend = "gpu"), but no NVIDIA driver is configured: set services.xserver.videoDrivers = [ "nvidia" ] or hardware.nvidia.datacenter.enable = true (with hardware.nvidia.open as the GPU needs), or prove on the CPU (settings.gpus.backend = "cpu", no gpus).'';
        }
        {
          assertion = cudaVersion == null || lib.versionAtLeast cudaVersion minCudaVersion;
          message = "services.cuzk.cudaPackages is CUDA ${toString cudaVersion}, but cuzk's kernels need CUDA ${minCudaVersion} or later (nvcc --compress-mode, crates/cuzk-gpu/build.rs): pick e.g. pkgs.cudaPackages_12_8 or newer, and a driver that supports it.";
        }
      ];

    environment.etc."cuzk/cuzk.toml".source = configFile;
    environment.systemPackages = [ cfg.finalPackage ];

    users.users.cuzk = {
      isSystemUser = true;
      group = "cuzk";
      home = stateDir;
      description = "cuzk proving daemon";
    };
    users.groups.cuzk = { };

    # The units as shipped (lib/systemd/system in the package), with this host's changes as
    # drop-ins.
    systemd.packages = [ cfg.finalPackage ];
    systemd.tmpfiles.packages = [ cfg.finalPackage ];
    services.dbus.packages = [ cfg.finalPackage ];

    systemd.sockets.cuzk = {
      wantedBy = [ "sockets.target" ];
      # The empty entry resets the shipped ListenStream= before the host's own. cuzkd serves
      # every socket systemd passes it.
      socketConfig = {
        ListenStream = [
          ""
          cfg.socket.path
        ]
        ++ optional cfg.tcp.enable tcpListen;
        SocketGroup = cfg.socket.group;
      };
    };

    # The metrics endpoint's socket, passed to cuzk.service under the name cuzkd serves
    # /metrics on (systemd passes a service every listening socket whose Service= names it).
    # A scrape of a stopped daemon starts it, as a client's connection does.
    systemd.sockets.cuzk-metrics = mkIf cfg.metrics.enable {
      description = "cuzk Prometheus metrics endpoint";
      wantedBy = [ "sockets.target" ];
      # The empty entry resets the shipped unit's ListenStream= (127.0.0.1:9821).
      socketConfig = {
        ListenStream = [
          ""
          metricsListen
        ];
        FileDescriptorName = "metrics";
        Service = "cuzk.service";
      };
    };

    systemd.services.cuzk = {
      restartTriggers = [ (builtins.toJSON restartOnlySettings) ];
      reloadTriggers = [ configFile ];
      serviceConfig = {
        TimeoutStopSec = "${toString timeoutStopSec}s";
        # NixOS's systemd has Type=notify-reload (253+): systemd sends SIGHUP itself and waits
        # for cuzkd's RELOADING=1 ... READY=1; the shipped unit's ExecReload= (/bin/kill, for
        # older systemd) is reset.
        Type = "notify-reload";
        ExecReload = [ "" ];
        # The listening sockets come from cuzk.socket; the daemon itself opens unix sockets
        # only (the system bus, journald, sd_notify). Without a TCP listener or the metrics
        # endpoint the IP families go; with either, the shipped unit's AF_INET and AF_INET6 stay. The empty entry resets
        # the shipped unit's list (a drop-in's entries are added to it otherwise).
        RestrictAddressFamilies = [
          ""
          "AF_UNIX"
        ]
        ++ lib.optionals (cfg.tcp.enable || cfg.metrics.enable) [
          "AF_INET"
          "AF_INET6"
        ];
      }
      // optionalAttrs (cfg.paramDir != defaultParamDir) {
        # The shipped unit binds the default directory through PrivateTmp=; bind this one
        # too, so a directory under /var/tmp stays visible ("-": skipped when missing).
        BindReadOnlyPaths = [ "-${cfg.paramDir}" ];
      }
      // optionalAttrs (tcpFiles != { }) {
        LoadCredential = lib.mapAttrsToList (_: f: "${f.credential}:${f.path}") tcpFiles;
      };
    };

    boot.kernelModules = mkIf (cfg.gpus != [ ]) [ "nvidia_uvm" ];

    networking.firewall.allowedTCPPorts =
      optional cfg.openFirewall cfg.tcp.port ++ optional cfg.metrics.openFirewall cfg.metrics.port;
  };

  meta.maintainers = [ ];
}
