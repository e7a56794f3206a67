//! The chunk workspace of one MSM call: every device buffer its [`Layout`] names, allocated
//! once per call from the arena and reused by every chunk (inputs and readback sources
//! twice, for double-buffering).

use crate::arena::DeviceBuffer;
use crate::device::Gpu;
use crate::error::GpuError;

use super::curve::Curve;
use super::plan::{BaLayout, Layout};

pub(crate) struct Workspace {
    pub(crate) points: [Option<DeviceBuffer>; 2],
    pub(crate) idx: [Option<DeviceBuffer>; 2],
    pub(crate) scalars: [Option<DeviceBuffer>; 2],
    pub(crate) jac: [DeviceBuffer; 2],
    pub(crate) class: Option<DeviceBuffer>,
    pub(crate) cursor: Option<DeviceBuffer>,
    pub(crate) entries: Option<DeviceBuffer>,
    pub(crate) keys: Option<DeviceBuffer>,
    /// XYZZ points and bucket keys of the carries, two buffers that levels ping-pong between.
    pub(crate) carry_a: Option<(DeviceBuffer, DeviceBuffer)>,
    pub(crate) carry_b: Option<(DeviceBuffer, DeviceBuffer)>,
    pub(crate) buckets: Option<DeviceBuffer>,
    pub(crate) segs: Option<DeviceBuffer>,
    pub(crate) red_a: Option<DeviceBuffer>,
    pub(crate) red_b: Option<DeviceBuffer>,
    pub(crate) partial: DeviceBuffer,
    /// The batch-affine buffers, in the order of `BaLayout::buffers`, and their layout
    /// (no levels: none).
    pub(crate) ba: Vec<Option<DeviceBuffer>>,
    pub(crate) ba_layout: BaLayout,
}

fn alloc_opt(gpu: &Gpu, bytes: usize) -> Result<Option<DeviceBuffer>, GpuError> {
    if bytes == 0 {
        Ok(None)
    } else {
        gpu.alloc(bytes).map(Some)
    }
}

/// The device address of an optional buffer (0: none, which the kernels take as absent).
pub(crate) fn ptr(b: &Option<DeviceBuffer>) -> u64 {
    b.as_ref().map_or(0, |b| b.ptr())
}

impl Workspace {
    pub(crate) fn new<C: Curve>(gpu: &Gpu, l: &Layout) -> Result<Self, GpuError> {
        let two = |b: usize| -> Result<[Option<DeviceBuffer>; 2], GpuError> {
            Ok([alloc_opt(gpu, b)?, alloc_opt(gpu, b)?])
        };
        let carry = |b: usize| -> Result<Option<(DeviceBuffer, DeviceBuffer)>, GpuError> {
            if b == 0 {
                return Ok(None);
            }
            let entries = b / (C::XYZZ_BYTES + 4);
            Ok(Some((
                gpu.alloc(entries * C::XYZZ_BYTES)?,
                gpu.alloc(entries * 4)?,
            )))
        };
        Ok(Workspace {
            points: two(l.points)?,
            idx: two(l.idx)?,
            scalars: two(l.scalars)?,
            jac: [gpu.alloc(l.jac)?, gpu.alloc(l.jac)?],
            class: alloc_opt(gpu, l.class)?,
            cursor: alloc_opt(gpu, l.cursor)?,
            entries: alloc_opt(gpu, l.entries)?,
            keys: alloc_opt(gpu, l.keys)?,
            carry_a: carry(l.carry_a)?,
            carry_b: carry(l.carry_b)?,
            buckets: alloc_opt(gpu, l.buckets)?,
            segs: alloc_opt(gpu, l.segs)?,
            red_a: alloc_opt(gpu, l.red_a)?,
            red_b: alloc_opt(gpu, l.red_b)?,
            partial: gpu.alloc(l.partial)?,
            ba: if l.ba.levels > 0 {
                l.ba.buffers().iter().map(|&b| alloc_opt(gpu, b)).collect::<Result<_, _>>()?
            } else {
                Vec::new()
            },
            ba_layout: l.ba,
        })
    }

    /// The two carry buffers as (points, keys) addresses.
    pub(crate) fn carries(&self) -> [(u64, u64); 2] {
        let (ca, cb) = (self.carry_a.as_ref().unwrap(), self.carry_b.as_ref().unwrap());
        [(ca.0.ptr(), ca.1.ptr()), (cb.0.ptr(), cb.1.ptr())]
    }
}
