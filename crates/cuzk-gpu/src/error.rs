use cudarc::driver::DriverError;

/// Why the GPU could not do what was asked. None of these is a panic: a machine without a
/// GPU, a driver or kernels is a normal condition that callers report and route around.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("built without GPU kernels (nvcc was not found when cuzk-gpu was compiled; install nvcc or set NVCC, then rebuild)")]
    NoKernels,
    #[error("no CUDA driver ({0})")]
    NoDriver(String),
    #[error("no CUDA device (the driver reports {0} devices; asked for ordinal {1})")]
    NoDevice(usize, usize),
    #[error("CUDA {op} failed: {err}")]
    Driver { op: &'static str, err: DriverError },
    #[error("VRAM budget of device {device} exceeded: {requested} bytes asked with {in_use} of {budget} in use")]
    OverBudget {
        device: usize,
        requested: usize,
        in_use: usize,
        budget: usize,
    },
    #[error("pinned host pool budget exceeded: {requested} bytes asked with {in_use} of {budget} in use")]
    PinnedOverBudget {
        requested: usize,
        in_use: usize,
        budget: usize,
    },
    #[error("cancelled")]
    Cancelled,
    /// Where points made on the device went (a spill file) refused them.
    #[error("storing the points made on the device: {0}")]
    Sink(String),
}

/// `map_err` adaptor naming the driver call that failed.
pub(crate) fn driver(op: &'static str) -> impl FnOnce(DriverError) -> GpuError {
    move |err| GpuError::Driver { op, err }
}
