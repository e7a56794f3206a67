# services.cuzk: the cuzk proving daemon as a socket-activated, hardened systemd service.
#
# The units, D-Bus policy and tmpfiles snippet come from the package (systemd/ in the
# repository, installed as shipped); this module adds what differs per host on top of them:
# the CUDA version the package is built with, the GPUs and their memory budgets, the host
# memory budgets, where the parameters are, the socket, an optional TCP listener. Everything
# else is `settings`, written as /etc/cuzk/cuzk.toml (README "Configuration").
{
  config,
  lib,
  pkgs,
  ...
}:

let
  inherit (lib)
    mkOption
    mkEnableOption
    mkPackageOption
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

  finalSettings = lib.recursiveUpdate cfg.settings typedSettings;
  configFile = settingsFormat.generate "cuzk.toml" finalSettings;

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
in
{
  options.services.cuzk = {
    enable = mkEnableOption "cuzk, the GPU Groth16 proving daemon for Filecoin (socket-activated)";

    package = mkPackageOption pkgs "cuzk" { };

    cudaPackages = mkOption {
      type = types.attrs;
      default = pkgs.cudaPackages;
      defaultText = literalExpression "pkgs.cudaPackages";
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
        exist when it starts and cannot load modules itself.
      '';
    };

    hostMemoryBudget = mkOption {
      type = types.nullOr types.ints.positive;
      default = null;
      example = literalExpression "384 * 1024 * 1024 * 1024";
      description = ''
        Bytes of host memory synthesized and proving jobs may hold together
        (`[engine] host_memory_budget_bytes`). `null`: three quarters of RAM.
      '';
    };

    pinnedMemoryBudget = mkOption {
      type = types.nullOr types.ints.positive;
      default = null;
      example = literalExpression "64 * 1024 * 1024 * 1024";
      description = ''
        Bytes of page-locked (pinned) host memory each GPU's transfer pool may hold
        (`[gpus] pinned_memory_budget_bytes`; at least 64 MiB, its two staging buffers).
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
        description = "Address to listen on.";
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

    settings = mkOption {
      type = settingsFormat.type;
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
        `pinned_memory_budget_bytes`.
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
          assertion = cfg.pinnedMemoryBudget == null || cfg.pinnedMemoryBudget >= 64 * 1024 * 1024;
          message = "services.cuzk.pinnedMemoryBudget (${toString cfg.pinnedMemoryBudget}) is below 64 MiB, the two staging buffers every GPU transfer goes through.";
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
        ++ optional cfg.tcp.enable "${cfg.tcp.address}:${toString cfg.tcp.port}";
        SocketGroup = cfg.socket.group;
      };
    };

    systemd.services.cuzk = {
      restartTriggers = [ configFile ];
      serviceConfig =
        optionalAttrs (cfg.paramDir != defaultParamDir) {
          # The shipped unit binds the default directory through PrivateTmp=; bind this one
          # too, so a directory under /var/tmp stays visible ("-": skipped when missing).
          BindReadOnlyPaths = [ "-${cfg.paramDir}" ];
        }
        // optionalAttrs (tcpFiles != { }) {
          LoadCredential = lib.mapAttrsToList (_: f: "${f.credential}:${f.path}") tcpFiles;
        };
    };

    boot.kernelModules = mkIf (cfg.gpus != [ ]) [ "nvidia_uvm" ];

    networking.firewall.allowedTCPPorts = mkIf cfg.openFirewall [ cfg.tcp.port ];
  };

  meta.maintainers = [ ];
}
