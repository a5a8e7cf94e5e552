//! The embedding API: compress and decompress GPU buffer ranges into the caller's command encoder.
//!
//! [`Codec`] borrows the caller's device (wgpu handles are reference counted) and builds its pipelines
//! once. `compress` / `decompress` only *record*: they never submit, map or poll, so they can sit on a
//! training step's hot path. Sizes the host cannot know (how many values a tensor has) stay on the GPU,
//! in the stream's header; the host reads them only when it chooses to (see [`crate::host`]).

use std::sync::{Arc, Mutex, OnceLock};

use crate::activation::Activation;
use crate::dispatch::{begin_pass, KernelDispatch};
use crate::error::{Error, Result};
use crate::format::{self, DType, Layout, Options, TILE};
pub use crate::kernels::CodecPath;
pub use crate::kernels::Staging;
use crate::kernels::{Built, Elem, Fusion, Io, Kernels, Modes, Op, Sharing, Storage, TileOrder, Variant};
use crate::overlap::{self, Use};

/// A byte range of a buffer: what the codec reads or writes. The buffer needs `STORAGE` usage; `offset`
/// must be a multiple of the device's `min_storage_buffer_offset_alignment`; the buffer must extend to
/// the range's end rounded up to 4 bytes (kernels access whole 32-bit words and preserve bytes past the
/// range's end). An operation's ranges may lie in one buffer (a pool) as long as no range it writes
/// overlaps another of its ranges (`Error::OverlappingRanges`).
#[derive(Copy, Clone, Debug)]
pub struct BufferRange<'a> {
    /// The buffer.
    pub buffer: &'a wgpu::Buffer,
    /// Start in bytes.
    pub offset: u64,
    /// Length in bytes.
    pub size: u64,
}

impl<'a> BufferRange<'a> {
    /// `size` bytes at `offset`.
    pub fn new(buffer: &'a wgpu::Buffer, offset: u64, size: u64) -> Self {
        BufferRange { buffer, offset, size }
    }
    /// The whole buffer.
    pub fn whole(buffer: &'a wgpu::Buffer) -> Self {
        BufferRange { buffer, offset: 0, size: buffer.size() }
    }
    /// The range as a buffer binding.
    pub fn binding(&self) -> wgpu::BufferBinding<'a> {
        wgpu::BufferBinding { buffer: self.buffer, offset: self.offset, size: wgpu::BufferSize::new(self.size) }
    }
}

/// Tunables; the defaults come from the device.
#[derive(Clone, Debug, Default)]
pub struct CodecConfig {
    /// Use the portable path even where subgroups exist.
    pub force_portable: bool,
    /// Lower the per-dimension workgroup limit (tests reach the 2-D dispatch path with small tensors).
    pub max_workgroups_per_dim: Option<u32>,
    /// Lower the storage-binding size used for chunking (tests reach the chunked path with small tensors).
    pub max_binding_bytes: Option<u64>,
    /// Look-back attempts before the decoupled fallback recomputes a stalled predecessor (default 64).
    /// Tests lower it to 1 to drive the fallback path hard.
    pub spin_limit: Option<u32>,
    /// Kernel tuning constants (`kernels::parse_constants` syntax), e.g.
    /// `compress.LOOKBACK_PER_LANE=4`; validated when the pipelines are built (`Error::InvalidArgument`).
    /// For A/B measurements and tests of experimental kernel paths (the bench and the CLI take it from
    /// `BITSPARSE_KERNEL_CONSTANTS`; the library reads no environment).
    pub kernel_constants: Option<String>,
    /// How compress stages compacted values; `None`: [`Staging::Auto`]. [`Staging::Halves`] on a
    /// device without `Features::SHADER_I16` is `Error::Unsupported`; [`Staging::Direct`] there stores
    /// only 32-bit values directly.
    pub staging: Option<Staging>,
    /// Build the codec kernels with wgpu's runtime bounds checks (a debugging aid; the default builds
    /// them as trusted modules, see `dispatch::Program::new`).
    pub checked_shaders: bool,
}

/// Where the value streams of a compressed tensor lie inside its values section.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// One window with no gaps (one-chunk GPU compress, CPU compress): tiles in order, or under
    /// [`TileOrder::Unordered`] in the order they claimed their place.
    Compact,
    /// A chunked GPU compress: chunk `c` (tiles `c*chunk_tiles ..`) starts at
    /// [`Layout::chunk_value_base`] of its first tile, so there are gaps between chunks.
    Chunked {
        /// Tiles per chunk.
        chunk_tiles: u64,
    },
}

/// A compressed tensor in a GPU buffer: what `decompress` needs to find it.
#[derive(Clone, Debug)]
pub struct Compressed {
    /// Element type, count, options and section offsets.
    pub layout: Layout,
    /// The buffer holding the stream.
    pub buffer: wgpu::Buffer,
    /// Byte offset of the stream's header in `buffer`.
    pub offset: u64,
    /// Bytes of the range the stream may occupy (at least its compact size).
    pub size: u64,
    /// Placement of the value streams.
    pub placement: Placement,
}

crate::shader_params! {
    /// The uniform of `compress.wgsl`: one chunk of a compress (and, for the last chunk, its `finish`).
    struct CompressParams: "compress.wgsl" Params {
        tiles: u32,
        full_tiles: u32,
        tail_len: u32,
        sign_pack: u32,
        table_idx: u32,
        mask_idx: u32,
        val_idx: u32,
        val_base: u32,
        hdr_idx: u32,
        info: u32,
        n_lo: u32,
        n_hi: u32,
        slot: u32,
        act: u32,
        /// Words before the values section (arena commit).
        values_offset: u32,
        fp8_fmt: u32,
    }
}

crate::shader_params! {
    /// The uniform of `compress_v2.wgsl`.
    struct CompressV2Params: "compress_v2.wgsl" Params {
        tiles: u32,
        full_tiles: u32,
        tail_len: u32,
        sign_pack: u32,
        mbits: u32,
        ebits: u32,
        desc_idx: u32,
        dir_idx: u32,
        data_idx: u32,
        info: u32,
        n_lo: u32,
        n_hi: u32,
    }
}

crate::shader_params! {
    /// The uniform of `decompress_v2.wgsl`.
    struct DecompressV2Params: "decompress_v2.wgsl" Params {
        tiles: u32,
        last_len: u32,
        full_tiles: u32,
        mbits: u32,
        sign_pack: u32,
        tile_starts: u32,
        desc_idx: u32,
        dir_idx: u32,
        data_idx: u32,
        _pad0: u32,
        _pad1: u32,
        _pad2: u32,
    }
}

crate::shader_params! {
    /// The uniform of `decompress.wgsl`: one chunk of a decompress or fused backward.
    struct DecompressParams: "decompress.wgsl" Params {
        tiles: u32,
        full_tiles: u32,
        tail_len: u32,
        sign_pack: u32,
        table_idx: u32,
        mask_idx: u32,
        val_idx: u32,
        val_base: u32,
        hdr_idx: u32,
        _pad0: u32,
        _pad1: u32,
        _pad2: u32,
        slot: u32,
        act: u32,
        /// Fused backward: 1 to also write the dense activation.
        write_a: u32,
        fp8_fmt: u32,
    }
}

/// The format of FP8 storage (`Arena::fused_forward_fp8`): what the stream's codes are. An enum until it is
/// written into a kernel's uniform ([`Fp8Format::code`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fp8Format {
    /// e4m3fn.
    E4m3,
    /// e5m2.
    E5m2,
}

impl Fp8Format {
    /// The format of `dtype`, if it is an FP8 type.
    pub(crate) fn of(dtype: DType) -> Option<Fp8Format> {
        match dtype {
            DType::E4m3 => Some(Fp8Format::E4m3),
            DType::E5m2 => Some(Fp8Format::E5m2),
            _ => None,
        }
    }

    /// `fp8_fmt` of the kernels' uniforms (and `fmt` of lib/fp8.wgsl): 0 e4m3fn, 1 e5m2.
    pub(crate) fn code(self) -> u32 {
        match self {
            Fp8Format::E4m3 => 0,
            Fp8Format::E5m2 => 1,
        }
    }
}

/// Scan state words before the per-tile status words (see `shaders/compress.wgsl`).
const SCAN_HEAD_WORDS: u64 = 2;

#[derive(Debug)]
struct Inner {
    device: wgpu::Device,
    kernels: Kernels,
    max_binding: u64,
    align: u64,
    max_wg_dim: u32,
    scan: Mutex<Option<wgpu::Buffer>>,
    dummy_ro: wgpu::Buffer,
    dummy_rw: wgpu::Buffer,
    dummy_rw2: wgpu::Buffer,
    dummy_rw3: wgpu::Buffer,
    /// `shaders/decompress_v2.wgsl` for 8-, 16- and 32-bit elements, each built on first use for each
    /// sign mode ([`v2_slot`]; the slots of `all_full` stay empty).
    v2_decoder: [OnceLock<crate::dispatch::Kernel>; 12],
    /// `shaders/compress_v2.wgsl` (`header`, `compress`) for 8-, 16- and 32-bit elements, built on first
    /// use for each sign mode and for tensors with and without a partial tile ([`v2_slot`]).
    v2_encoder: [OnceLock<(crate::dispatch::Kernel, crate::dispatch::Kernel)>; 12],
}

/// The GPU codec of one device. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Codec {
    inner: Arc<Inner>,
}

/// One chunk of a chunked operation: tiles `first .. first + tiles` of the tensor.
#[derive(Copy, Clone, Debug)]
struct Chunk {
    first: u64,
    tiles: u64,
    full_tiles: u64,
    tail_len: u64,
}

impl Codec {
    /// The codec for `device`, on the subgroup path where the device has `Features::SUBGROUP`.
    pub fn new(device: &wgpu::Device) -> Result<Codec> {
        Self::with_config(device, CodecConfig::default())
    }

    /// The codec for `device` with `config`.
    pub fn with_config(device: &wgpu::Device, config: CodecConfig) -> Result<Codec> {
        let limits = device.limits();
        let path = if !config.force_portable && crate::kernels::subgroup_path_unsupported(device).is_none() {
            CodecPath::Subgroup
        } else {
            CodecPath::Portable
        };
        let kernels = Kernels::new(device, path, &config)?;
        let mut max_binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        if let Some(b) = config.max_binding_bytes {
            max_binding = max_binding.min(b);
        }
        let align = limits.min_storage_buffer_offset_alignment as u64;
        // Chunks must hold at least one tile plus alignment slack.
        if max_binding < 2 * TILE as u64 * 2 + align {
            return Err(Error::Unsupported(format!("storage bindings of {max_binding} bytes are too small")));
        }
        let mut max_wg_dim = limits.max_compute_workgroups_per_dimension;
        if let Some(m) = config.max_workgroups_per_dim {
            max_wg_dim = max_wg_dim.min(m.max(1));
        }
        let dummy = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 256,
                usage,
                mapped_at_creation: false,
            })
        };
        let dummy_ro = dummy("bitsparse.dummy_ro", wgpu::BufferUsages::STORAGE);
        let dummy_rw = dummy("bitsparse.dummy_rw", wgpu::BufferUsages::STORAGE);
        let dummy_rw2 = dummy("bitsparse.dummy_rw2", wgpu::BufferUsages::STORAGE);
        let dummy_rw3 = dummy("bitsparse.dummy_rw3", wgpu::BufferUsages::STORAGE);
        Ok(Codec {
            inner: Arc::new(Inner {
                device: device.clone(),
                kernels,
                max_binding,
                align,
                max_wg_dim,
                scan: Mutex::new(None),
                dummy_ro,
                dummy_rw,
                dummy_rw2,
                dummy_rw3,
                v2_decoder: std::array::from_fn(|_| OnceLock::new()),
                v2_encoder: std::array::from_fn(|_| OnceLock::new()),
            }),
        })
    }

    /// Builds the arena and fused-kernel pipelines now (compress variants in `order`), so the first
    /// training step does not pay for shader compilation. Called by [`crate::arena::Arena::new`].
    pub(crate) fn warm_arena_variants(&self, order: TileOrder) -> Result<()> {
        for (op, fusion) in [(Op::Compress, Fusion::Forward), (Op::Decompress, Fusion::Backward)] {
            for elem in [Elem::Bits16, Elem::Bits8, Elem::Bits32] {
                self.kernels(op, elem, Io::Arena, Fusion::None, Storage::Native, false, order)?;
            }
            self.kernels(op, Elem::Bits16, Io::Arena, fusion, Storage::Native, false, order)?;
            // FP8 storage is optional: a device that cannot build it reports that when it is used.
            let _ = self.kernels(op, Elem::Bits16, Io::Arena, fusion, Storage::Fp8, false, order);
            // The F32 and F16 fused kernels are built on first use (not every trainer runs them).
        }
        Ok(())
    }

    /// Builds the fused forward and backward kernels of `dtype` (and its plain arena ones) now.
    pub(crate) fn warm_fused_variants(&self, dtype: DType, order: TileOrder) -> Result<()> {
        let f16_math = dtype == DType::F16;
        for (op, fusion) in [(Op::Compress, Fusion::Forward), (Op::Decompress, Fusion::Backward)] {
            self.kernels(op, elem(dtype), Io::Arena, Fusion::None, Storage::Native, false, order)?;
            self.kernels(op, elem(dtype), Io::Arena, fusion, Storage::Native, f16_math, order)?;
            // Pool allocators (Burn's) may put z and a, or g and dz, in one buffer: that variant too.
            let v = self.inner.kernels.variant(op, elem(dtype), Io::Arena, fusion, Storage::Native, f16_math)?;
            let v = self.inner.kernels.direct(Self::ordered(v, order)?, false);
            for modes in Self::warm_modes(fusion, f16_math) {
                self.shared_kernels(v.with_modes(modes), Sharing::Shared)?;
            }
        }
        Ok(())
    }

    /// `v` with its tiles in `order` where it is a compress (a decompress has no order).
    fn ordered(v: Variant, order: TileOrder) -> Result<Variant> {
        match v.op() {
            Op::Compress => v.with_order(order).map_err(|e| Error::InvalidArgument(format!("codec kernel: {e}"))),
            Op::Decompress => Ok(v),
        }
    }

    /// Builds the kernels of one variant (a compress's tiles in `order`) that an unpacked stream of
    /// whole tiles uses (its direct-store variant where it has one, [`Kernels::direct`]), for each
    /// activation a fused variant may run ([`Self::warm_modes`]): what the warm-ups prepare. Other
    /// modes (sign packing, a partial tile) are built on first use.
    fn kernels(
        &self,
        op: Op,
        elem: Elem,
        io: Io,
        fusion: Fusion,
        storage: Storage,
        f16_math: bool,
        order: TileOrder,
    ) -> Result<()> {
        let k = &self.inner.kernels;
        let v = k.direct(Self::ordered(k.variant(op, elem, io, fusion, storage, f16_math)?, order)?, false);
        for modes in Self::warm_modes(fusion, f16_math) {
            k.get(v.with_modes(modes))?;
        }
        Ok(())
    }

    /// The modes the warm-ups build a variant for: unpacked values and whole tiles, and for a fused
    /// kernel each activation (F16's stepwise ReLU² too, what Burn's F16 computes on GPUs with native
    /// F16 arithmetic).
    fn warm_modes(fusion: Fusion, f16_math: bool) -> Vec<Modes> {
        if fusion == Fusion::None {
            return vec![Modes::unpacked(None)];
        }
        let mut acts = vec![Activation::Relu, Activation::Relu2];
        if f16_math {
            acts.push(Activation::Relu2Stepwise);
        }
        acts.into_iter().map(|a| Modes::unpacked(Some(a.code()))).collect()
    }

    /// The kernels of `v` with `sharing`: a [`Sharing::Shared`] variant (inputs bound `read_write`, for
    /// inputs in an output's buffer) is built on its first use, never by the warm-ups.
    fn shared_kernels(&self, v: Variant, sharing: Sharing) -> Result<Arc<Built>> {
        let v = v.with_sharing(sharing).map_err(|e| Error::InvalidArgument(format!("codec kernel: {e}")))?;
        self.inner.kernels.get(v)
    }

    /// The path the kernels use.
    pub fn path(&self) -> CodecPath {
        self.inner.kernels.path
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.inner.device
    }

    /// The layout of a tensor.
    pub fn layout(&self, dtype: DType, n: u64, options: Options) -> Result<Layout> {
        Layout::new(dtype, n, options)
    }

    /// Bytes an output range of `compress` must have: the worst case (every element nonzero).
    pub fn output_capacity(&self, dtype: DType, n: u64, options: Options) -> Result<u64> {
        Ok(Layout::new(dtype, n, options)?.capacity_bytes())
    }

    /// The largest storage binding the codec uses, bytes.
    pub(crate) fn max_binding(&self) -> u64 {
        self.inner.max_binding
    }

    /// Tiles per chunk: the most whole tiles whose dense bytes fit one binding with alignment slack.
    pub(crate) fn chunk_tiles(&self, dtype: DType) -> u64 {
        let tile_bytes = TILE as u64 * dtype.bytes();
        ((self.inner.max_binding - self.inner.align - 4) / tile_bytes).max(1)
    }

    fn chunks(layout: &Layout, chunk_tiles: u64) -> Vec<Chunk> {
        let mut out = Vec::new();
        let mut first = 0;
        while first < layout.tiles {
            let tiles = chunk_tiles.min(layout.tiles - first);
            let elems = (layout.n - first * TILE as u64).min(tiles * TILE as u64);
            let full_tiles = elems / TILE as u64;
            out.push(Chunk { first, tiles, full_tiles, tail_len: elems - full_tiles * TILE as u64 });
            first += tiles;
        }
        out
    }

    /// Checks a range: usage, alignment, bounds (to the end rounded up to whole words).
    fn check_range(&self, what: &'static str, r: &BufferRange<'_>) -> Result<()> {
        if !r.buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::MissingUsage { what, usage: "STORAGE" });
        }
        if r.offset % self.inner.align != 0 {
            return Err(Error::Misaligned { what, offset: r.offset, align: self.inner.align });
        }
        let end = r.offset.checked_add(r.size.div_ceil(4) * 4);
        if end.is_none_or(|e| e > r.buffer.size()) {
            return Err(Error::OutOfBounds { what, offset: r.offset, size: r.size, buffer_size: r.buffer.size() });
        }
        Ok(())
    }

    /// A binding of `words` words starting at byte `start` of `buffer`, widened down to the offset
    /// alignment. Returns the binding and the word index of `start` inside it.
    fn window<'b>(&self, buffer: &'b wgpu::Buffer, start: u64, words: u64) -> (wgpu::BufferBinding<'b>, u32) {
        let base = start / self.inner.align * self.inner.align;
        let slack = start - base;
        let size = (slack + words * 4).max(4);
        (wgpu::BufferBinding { buffer, offset: base, size: wgpu::BufferSize::new(size) }, (slack / 4) as u32)
    }

    fn scan_buffer(&self, words: u64) -> wgpu::Buffer {
        let mut slot = self.inner.scan.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = slot.as_ref() {
            if b.size() >= words * 4 {
                return b.clone();
            }
        }
        let b = self.inner.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.scan"),
            size: (words * 4).next_multiple_of(256),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        *slot = Some(b.clone());
        b
    }

    /// One workgroup per tile, in rows of at most the per-dimension limit.
    fn grid(&self, groups: u64) -> [u32; 3] {
        let x = groups.min(self.inner.max_wg_dim as u64).max(1);
        [x as u32, groups.div_ceil(x) as u32, 1]
    }

    /// Records the compression of `n` elements of `dtype` read from `input` into the stream range
    /// `output` (at least [`Codec::output_capacity`] bytes). Nothing is submitted.
    ///
    /// `input` and `output` may be ranges of one buffer (pooled tensors) that do not overlap; overlapping
    /// ones are `Error::OverlappingRanges`, since the kernel would read what it writes.
    ///
    /// Errors the GPU finds (a sign bit set under sign packing) are written to the stream's header
    /// status word; [`crate::host::read_header`] or a decompress (which then writes nothing) surface them.
    pub fn compress(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        input: BufferRange<'_>,
        dtype: DType,
        n: u64,
        options: Options,
        output: BufferRange<'_>,
    ) -> Result<Compressed> {
        self.compress_with_order(encoder, input, dtype, n, options, TileOrder::Ordered, output)
    }

    /// [`Codec::compress`] with the tiles placed in `order`: [`TileOrder::Ordered`] writes the
    /// deterministic stream `cpu::compress` writes; [`TileOrder::Unordered`] lets each tile claim its
    /// place with one atomic (faster; the same decoded tensor, bytes that vary from run to run).
    pub fn compress_with_order(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        input: BufferRange<'_>,
        dtype: DType,
        n: u64,
        options: Options,
        order: TileOrder,
        output: BufferRange<'_>,
    ) -> Result<Compressed> {
        let layout = Layout::new(dtype, n, options)?;
        self.check_range("compress output", &output)?;
        if output.size < layout.capacity_bytes() {
            return Err(Error::RangeTooSmall {
                what: "compress output",
                need: layout.capacity_bytes(),
                got: output.size,
            });
        }
        let placement = self.record_compress(encoder, input, &layout, Target::Plain(output), order)?;
        Ok(Compressed { layout, buffer: output.buffer.clone(), offset: output.offset, size: output.size, placement })
    }

    /// Records a compress into `target`; shared by the plain API and the arena.
    pub(crate) fn record_compress(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        input: BufferRange<'_>,
        layout: &Layout,
        target: Target<'_>,
        order: TileOrder,
    ) -> Result<Placement> {
        let (dtype, sharing) = self.check_compress(&input, layout, &target)?;
        let chunk_tiles = self.chunk_tiles(dtype);
        let chunks = Self::chunks(layout, chunk_tiles);
        let placement = if chunks.len() > 1 { Placement::Chunked { chunk_tiles } } else { Placement::Compact };
        let (io, fusion, storage) = target.kind();
        let f16_math = fusion != Fusion::None && dtype == DType::F16;
        let v = self.inner.kernels.variant(Op::Compress, elem(dtype), io, fusion, storage, f16_math)?;
        let v = self.inner.kernels.direct(Self::ordered(v, order)?, layout.options.sign_pack);
        // Pipelines built for this call's modes; a chunk of whole tiles takes the one without the
        // partial tile's code.
        let modes = Modes {
            sign_pack: Some(layout.options.sign_pack),
            act: target.act().map(Activation::code),
            all_full: false,
        };
        let mut k = None;
        let mut k_full = None;
        let mut kernels_of = |c: &Chunk| -> Result<Arc<Built>> {
            let (cell, all_full) = if c.tail_len == 0 { (&mut k_full, true) } else { (&mut k, false) };
            if cell.is_none() {
                *cell = Some(self.shared_kernels(v.with_modes(Modes { all_full, ..modes }), sharing)?);
            }
            Ok(cell.clone().expect("set above"))
        };
        let scan = self.scan_buffer(SCAN_HEAD_WORDS + chunk_tiles.min(layout.tiles.max(1)));
        let base = CompressParams {
            sign_pack: layout.options.sign_pack as u32,
            info: layout.info_word(),
            n_lo: layout.n as u32,
            n_hi: (layout.n >> 32) as u32,
            slot: target.slot_word(),
            act: target.act().map_or(0, Activation::code),
            values_offset: layout.values_offset as u32,
            fp8_fmt: target.fp8().map_or(0, Fp8Format::code),
            ..Default::default()
        };
        let stream = Self::stream_bindings(layout, &target);
        let mut last = None;
        // `finish` takes the last chunk's bind group, so it comes from that chunk's pipelines (with no
        // chunk, the partial-tile ones).
        let mut last_k = None;
        for (ci, c) in chunks.iter().enumerate() {
            // The scan state is per chunk; status bits (word 0) accumulate over the chunks.
            let clear_from = if ci == 0 { 0 } else { 4 };
            // Unordered tiles keep no per-tile status words: the counter is all there is to clear.
            let scan_words = match order {
                TileOrder::Ordered => SCAN_HEAD_WORDS + c.tiles,
                TileOrder::Unordered => SCAN_HEAD_WORDS,
            };
            encoder.clear_buffer(&scan, clear_from, Some(scan_words * 4 - clear_from));
            let (binds, p) = self.compress_chunk(&input, layout, &target, c, dtype.bytes(), base);
            let binds = binds.into_iter().chain(stream.iter().cloned());
            let kc = kernels_of(c)?;
            let mut pass = begin_pass(encoder, "bitsparse.compress");
            let mut d = KernelDispatch::new(&self.inner.device, &mut pass, &kc.main);
            d.bind(binds).bind([("scan", scan.as_entire_buffer_binding())]).params(&p);
            last = Some(d.dispatch(self.grid(c.tiles)));
            last_k = Some(kc);
        }
        let k = match last_k {
            Some(k) => k,
            None => kernels_of(&Chunk { first: 0, tiles: 0, full_tiles: 0, tail_len: 1 })?,
        };
        self.record_finish(encoder, &k, &target, stream, &scan, last, &base);
        Ok(placement)
    }

    /// Checks a compress's ranges; returns the dense element type (BF16 under FP8 storage, whose stream
    /// holds e4m3/e5m2 codes) and whether the input shares a buffer with an output. Records nothing (the
    /// arena calls it before its `reserve`).
    pub(crate) fn check_compress(
        &self,
        input: &BufferRange<'_>,
        layout: &Layout,
        target: &Target<'_>,
    ) -> Result<(DType, Sharing)> {
        let dtype = if target.fp8().is_some() { DType::Bf16 } else { layout.dtype };
        let dense_bytes = layout.n * dtype.bytes();
        if target.fp8().is_some() && target.act().is_none() {
            return Err(Error::InvalidArgument("FP8 storage needs the fused forward".into()));
        }
        if input.size != dense_bytes {
            return Err(Error::InvalidArgument(format!(
                "input range of {} bytes does not hold {} {dtype} elements ({dense_bytes} bytes)",
                input.size, layout.n,
            )));
        }
        self.check_range("compress input", input)?;
        if let Target::Arena { fused: Some((_, a)), .. } = target {
            self.check_range("fused forward output", a)?;
            if a.size != dense_bytes {
                return Err(Error::InvalidArgument("fused forward output must have the input's size".into()));
            }
        }
        if let Target::Arena { arena, .. } = target {
            if input.buffer == *arena {
                return Err(Error::InvalidArgument("the input must not live in the arena buffer".into()));
            }
        }
        let output = match target {
            Target::Plain(output) => Some(Use::write("compress output", output)),
            Target::Arena { fused: Some((_, a)), .. } => Some(Use::write("fused forward output", a)),
            Target::Arena { .. } => None,
        };
        let uses: Vec<_> = [Some(Use::read("compress input", input)), output].into_iter().flatten().collect();
        Ok((dtype, overlap::check(&uses)?))
    }

    /// The bindings (all but `scan` and the stream's, [`Codec::stream_bindings`]) and the uniform of
    /// compress chunk `c`; `eb`: dense bytes per element.
    fn compress_chunk<'b>(
        &'b self,
        input: &BufferRange<'b>,
        layout: &Layout,
        target: &Target<'b>,
        c: &Chunk,
        eb: u64,
        base: CompressParams,
    ) -> (Vec<(&'static str, wgpu::BufferBinding<'b>)>, CompressParams) {
        let (src4, src_tail) = self.dense_windows(input, c, eb, &self.inner.dummy_ro.as_entire_buffer_binding());
        let mut binds = vec![("src4", src4), ("src_tail", src_tail)];
        let val_base = layout.chunk_value_base(c.first);
        let mask_word = layout.mask_offset + c.first * format::TILE_MASK_WORDS as u64;
        let (mask_idx, val_idx) = match target {
            Target::Plain(output) => {
                let elems = c.full_tiles * TILE as u64 + c.tail_len;
                let (mask_b, mask_idx) = self.window(output.buffer, output.offset + mask_word * 4, elems.div_ceil(32));
                let cap: u64 = (c.first..c.first + c.tiles).map(|t| layout.tile_capacity_words(t)).sum();
                let (vals_b, val_idx) =
                    self.window(output.buffer, output.offset + (layout.values_offset + val_base) * 4, cap);
                binds.extend([("mask_out", mask_b), ("vals_out", vals_b)]);
                (mask_idx, val_idx)
            }
            Target::Arena { fused, .. } => {
                if let Some((_, a)) = fused {
                    let (a4, a_tail) = self.dense_windows(a, c, eb, &self.inner.dummy_rw.as_entire_buffer_binding());
                    binds.extend([("a4", a4), ("a_tail", a_tail)]);
                }
                (mask_word as u32, (layout.values_offset + val_base) as u32)
            }
        };
        let p = CompressParams {
            tiles: c.tiles as u32,
            full_tiles: c.full_tiles as u32,
            tail_len: c.tail_len as u32,
            table_idx: (format::HEADER_WORDS as u64 + c.first) as u32,
            mask_idx,
            val_idx,
            val_base: val_base as u32,
            hdr_idx: 0,
            ..base
        };
        (binds, p)
    }

    /// Where a compress writes its header (and in the arena, its commit): the same for every chunk.
    fn stream_bindings<'b>(layout: &Layout, target: &Target<'b>) -> Vec<(&'static str, wgpu::BufferBinding<'b>)> {
        match target {
            Target::Plain(output) => {
                let meta_words = format::HEADER_WORDS as u64 + layout.tiles;
                let size = wgpu::BufferSize::new(meta_words * 4);
                vec![("head", wgpu::BufferBinding { buffer: output.buffer, offset: output.offset, size })]
            }
            Target::Arena { arena, ctrl, .. } => {
                vec![("arena", arena.as_entire_buffer_binding()), ("ctrl", ctrl.as_entire_buffer_binding())]
            }
        }
    }

    /// Records `finish`: the header (and in the arena, the commit), from the last chunk's scan state with
    /// its bind group, or for an empty tensor from a cleared scan state.
    fn record_finish(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        k: &Built,
        target: &Target<'_>,
        stream: Vec<(&'static str, wgpu::BufferBinding<'_>)>,
        scan: &wgpu::Buffer,
        last: Option<wgpu::BindGroup>,
        base: &CompressParams,
    ) {
        if last.is_none() {
            encoder.clear_buffer(scan, 0, Some(SCAN_HEAD_WORDS * 4));
        }
        let finish = k.finish.as_ref().expect("compress variants have finish");
        let mut pass = begin_pass(encoder, "bitsparse.finish");
        let mut d = KernelDispatch::new(&self.inner.device, &mut pass, finish);
        match last {
            Some(group) => d.dispatch_group(&group, [1, 1, 1]),
            None => {
                // No chunk: every per-chunk range is a dummy.
                let per_chunk: &[&'static str] = match target {
                    Target::Plain(_) => &["mask_out", "vals_out"],
                    Target::Arena { fused: Some(_), .. } => &["a4", "a_tail"],
                    Target::Arena { .. } => &[],
                };
                let (ro, rw) = (&self.inner.dummy_ro, &self.inner.dummy_rw);
                d.bind(
                    [("src4", ro), ("src_tail", ro), ("scan", scan)].map(|(n, b)| (n, b.as_entire_buffer_binding())),
                );
                d.bind(per_chunk.iter().map(|&n| (n, rw.as_entire_buffer_binding())));
                d.bind(stream).params(base).dispatch([1, 1, 1]);
            }
        }
    }

    /// The `(vec4 part, tail words)` bindings of a dense range for chunk `c`; `dummy` where empty.
    fn dense_windows<'b>(
        &self,
        r: &BufferRange<'b>,
        c: &Chunk,
        eb: u64,
        dummy: &wgpu::BufferBinding<'b>,
    ) -> (wgpu::BufferBinding<'b>, wgpu::BufferBinding<'b>) {
        let start = r.offset + c.first * TILE as u64 * eb;
        let full = if c.full_tiles > 0 {
            wgpu::BufferBinding {
                buffer: r.buffer,
                offset: start,
                size: wgpu::BufferSize::new(c.full_tiles * TILE as u64 * eb),
            }
        } else {
            dummy.clone()
        };
        let tail = if c.tail_len > 0 {
            let off = start + c.full_tiles * TILE as u64 * eb;
            wgpu::BufferBinding {
                buffer: r.buffer,
                offset: off,
                size: wgpu::BufferSize::new((c.tail_len * eb).div_ceil(4) * 4),
            }
        } else {
            dummy.clone()
        };
        (full, tail)
    }

    /// Records the decompression of `compressed` into the dense range `output` (exactly the tensor's
    /// dense bytes). Nothing is submitted. A stream whose header has status bits set is left unwritten.
    ///
    /// The stream's range (`compressed.offset`, `compressed.size`) and `output` may lie in one buffer
    /// (pooled tensors) if they do not overlap; overlapping ones are `Error::OverlappingRanges`.
    pub fn decompress(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        compressed: &Compressed,
        output: BufferRange<'_>,
    ) -> Result<()> {
        let src = BufferRange { buffer: &compressed.buffer, offset: compressed.offset, size: compressed.size };
        self.check_range("compressed stream", &src)?;
        if compressed.size < compressed.layout.values_offset * 4 {
            return Err(Error::RangeTooSmall {
                what: "compressed stream",
                need: compressed.layout.values_offset * 4,
                got: compressed.size,
            });
        }
        self.record_decompress(
            encoder,
            Source::Plain(compressed),
            &compressed.layout,
            compressed.placement,
            output,
            None,
        )
    }

    /// The trusted program of a version-2 shader for `dtype`'s element width on this codec's path.
    fn v2_program(&self, file: &'static str, dtype: DType) -> crate::dispatch::Program {
        let mut defines: Vec<&str> = match dtype.bits() {
            8 => vec!["BITS8"],
            32 => vec!["BITS32"],
            _ => vec![],
        };
        if self.path() == CodecPath::Subgroup {
            defines.push("SUBGROUP");
        }
        // The writer's u16 slots (no workgroup atomics), where the codec stages in u16 slots.
        if file == "compress_v2.wgsl" && self.inner.kernels.stages_halves(elem(dtype)) {
            defines.push("STAGE16");
        }
        crate::dispatch::Program::new(&self.inner.device, file, &defines, crate::dispatch::Trust::Trusted)
    }

    /// Records the compression of `n` elements of `dtype` read from `input` into a format-version-2
    /// stream (docs/FORMAT.md §14) in `output` (at least [`LayoutV2::capacity_bytes`] of the returned
    /// layout, with tile starts). Nothing is submitted.
    ///
    /// Each tile takes the smallest encoding exactly as `cpu::compress_v2` chooses it and claims its words
    /// with one atomic (no inter-workgroup waiting), so the directory holds tile starts
    /// (`TILE_STARTS`) and the bytes vary from run to run; `cpu::compact` of the stream is byte-identical
    /// to `cpu::compress_v2` of the data. A sign bit under sign packing sets the header's status (the
    /// stream then decodes to `Error::SignBitSet`). The input and the stream must lie in different
    /// buffers and each fit one storage binding (`Error::Unsupported` otherwise).
    ///
    /// [`LayoutV2::capacity_bytes`]: format::v2::LayoutV2::capacity_bytes
    #[allow(clippy::too_many_arguments)] // compress's arguments
    pub fn compress_v2(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        input: BufferRange<'_>,
        dtype: DType,
        n: u64,
        options: Options,
        output: BufferRange<'_>,
    ) -> Result<format::v2::LayoutV2> {
        let layout = format::v2::LayoutV2::new(dtype, n, options, true)?;
        let dense = n * dtype.bytes();
        if input.size != dense {
            return Err(Error::InvalidArgument(format!(
                "input range of {} bytes does not hold {n} {dtype} elements ({dense} bytes)",
                input.size
            )));
        }
        self.check_range("compress input", &input)?;
        self.check_range("compress output", &output)?;
        let cap = layout.capacity_bytes();
        if output.size < cap {
            return Err(Error::RangeTooSmall { what: "compress output", need: cap, got: output.size });
        }
        overlap::check(&[Use::read("compress input", &input), Use::write("compress output", &output)])?;
        if input.buffer == output.buffer {
            return Err(Error::Unsupported(
                "the version-2 compressor needs the input and the stream in different buffers".into(),
            ));
        }
        if cap > self.inner.max_binding || dense.div_ceil(4) * 4 > self.inner.max_binding {
            return Err(Error::Unsupported(
                "version-2 compress of a tensor larger than one binding: compress it in pieces (cpu::compress_v2 for files)"
                    .into(),
            ));
        }
        // Built on first use, with the override constants computed only then, not on every recorded call.
        let modes = Modes { sign_pack: Some(options.sign_pack), act: None, all_full: n % TILE as u64 == 0 };
        let cell = &self.inner.v2_encoder[v2_slot(dtype, modes)];
        let (header, main) = match cell.get() {
            Some(k) => k,
            None => {
                let mut constants = self.inner.kernels.constants("compress_v2")?;
                constants.extend(modes.constants());
                cell.get_or_init(|| {
                    let program = self.v2_program("compress_v2.wgsl", dtype);
                    (
                        program.kernel(&self.inner.device, "header", &[]),
                        program.kernel(&self.inner.device, "compress", &constants),
                    )
                })
            }
        };
        let tail = (n % TILE as u64) as u32;
        let full_tiles = n / TILE as u64;
        let params = CompressV2Params {
            tiles: layout.tiles as u32,
            full_tiles: full_tiles as u32,
            tail_len: tail,
            sign_pack: options.sign_pack as u32,
            mbits: dtype.mantissa_bits(),
            ebits: dtype.exponent_bits(),
            desc_idx: layout.desc_offset as u32,
            dir_idx: layout.dir_offset as u32,
            data_idx: layout.data_offset as u32,
            info: layout.info_word(),
            n_lo: n as u32,
            n_hi: (n >> 32) as u32,
        };
        let chunk = Chunk { first: 0, tiles: layout.tiles, full_tiles, tail_len: tail as u64 };
        let (src4, src_tail) =
            self.dense_windows(&input, &chunk, dtype.bytes(), &self.inner.dummy_ro.as_entire_buffer_binding());
        let out =
            wgpu::BufferBinding { buffer: output.buffer, offset: output.offset, size: wgpu::BufferSize::new(cap) };
        let mut pass = begin_pass(encoder, "bitsparse.compress_v2");
        for (kernel, groups) in [(header, 1), (main, layout.tiles)] {
            if groups == 0 {
                continue;
            }
            KernelDispatch::new(&self.inner.device, &mut pass, kernel)
                .bind([("src4", src4.clone()), ("src_tail", src_tail.clone()), ("out", out.clone())])
                .params(&params)
                .dispatch(self.grid(groups));
        }
        Ok(layout)
    }

    /// Records the decompression of a format-version-2 stream (docs/FORMAT.md §14) whose header says
    /// `layout`, held in `stream`, into the dense range `output` (exactly the tensor's dense bytes).
    /// Nothing is submitted.
    ///
    /// The kernel trusts the stream's directory and descriptors: validate a stream from outside first
    /// (`cpu::validate_any`, as [`crate::host::decompress_to_vec`] does). The stream and the output must
    /// each fit one storage binding (`Error::Unsupported` otherwise; the host helper splits larger
    /// streams into pieces of whole tile groups) and lie in different buffers.
    pub fn decompress_v2(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        layout: &format::v2::LayoutV2,
        stream: BufferRange<'_>,
        output: BufferRange<'_>,
    ) -> Result<()> {
        self.check_range("compressed stream", &stream)?;
        self.check_range("output", &output)?;
        let dense = layout.n * layout.dtype.bytes();
        if output.size != dense {
            return Err(Error::RangeTooSmall { what: "output", need: dense, got: output.size });
        }
        if stream.size < layout.data_offset * 4 {
            return Err(Error::RangeTooSmall {
                what: "compressed stream",
                need: layout.data_offset * 4,
                got: stream.size,
            });
        }
        overlap::check(&[Use::read("compressed stream", &stream), Use::write("output", &output)])?;
        if stream.buffer == output.buffer {
            return Err(Error::Unsupported(
                "the version-2 decoder needs the stream and the output in different buffers".into(),
            ));
        }
        if stream.size > self.inner.max_binding || dense.div_ceil(4) * 4 > self.inner.max_binding {
            return Err(Error::Unsupported(
                "version-2 stream or its output is larger than one binding: decompress it in pieces (host::decompress_to_vec does)".into(),
            ));
        }
        if layout.tiles == 0 {
            return Ok(());
        }
        let last_len = layout.tile_len(layout.tiles - 1);
        let full_tiles = layout.tiles - u64::from(last_len < TILE);
        let params = DecompressV2Params {
            tiles: layout.tiles as u32,
            last_len,
            full_tiles: full_tiles as u32,
            mbits: layout.dtype.mantissa_bits(),
            sign_pack: layout.options.sign_pack as u32,
            tile_starts: layout.tile_starts as u32,
            desc_idx: layout.desc_offset as u32,
            dir_idx: layout.dir_offset as u32,
            data_idx: layout.data_offset as u32,
            ..Default::default()
        };
        // The full tiles through a vec4 view, the partial last one (if any) through a word view, as the
        // version-1 decoder binds them (`dense_windows`).
        let chunk = Chunk {
            first: 0,
            tiles: layout.tiles,
            full_tiles,
            tail_len: if full_tiles < layout.tiles { last_len as u64 } else { 0 },
        };
        let (dst4, dst_tail) =
            self.dense_windows(&output, &chunk, layout.dtype.bytes(), &self.inner.dummy_rw.as_entire_buffer_binding());
        // Built for the stream's sign mode (no `all_full`: the version-1 decoder was slower with it).
        let modes = Modes { sign_pack: Some(layout.options.sign_pack), act: None, all_full: false };
        let kernel = self.inner.v2_decoder[v2_slot(layout.dtype, modes)].get_or_init(|| {
            // Trusted (no injected bounds checks or loop counters): every workgroup index is bounded by
            // the tile geometry or clamped, every loop by it too, and storage accesses are covered by
            // robust buffer access. Measured on the H200: docs/PERFORMANCE.md ("Format version 2").
            let program = self.v2_program("decompress_v2.wgsl", layout.dtype);
            program.kernel(&self.inner.device, "decompress_v2", &modes.constants())
        });
        let mut pass = begin_pass(encoder, "bitsparse.decompress_v2");
        KernelDispatch::new(&self.inner.device, &mut pass, kernel)
            .bind([("stream", stream.binding()), ("dst4", dst4), ("dst_tail", dst_tail)])
            .params(&params)
            .dispatch(self.grid(layout.tiles));
        Ok(())
    }

    /// Records a decompress (or fused backward) from `source`; shared by the plain API and the arena.
    pub(crate) fn record_decompress(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        source: Source<'_>,
        layout: &Layout,
        placement: Placement,
        output: BufferRange<'_>,
        fused: Option<FusedBackward<'_>>,
    ) -> Result<()> {
        // Under FP8 storage the fused backward's dense operands are BF16 while the stream is e4m3/e5m2.
        let fp8 = fused.as_ref().and_then(|f| f.fp8);
        let dense = if fp8.is_some() { DType::Bf16 } else { layout.dtype };
        let sharing = self.check_decompress(&source, layout, dense, &output, fused.as_ref())?;
        if layout.tiles == 0 {
            return Ok(());
        }
        let chunk_tiles = self.decompress_chunk_tiles(&source, layout, placement, dense)?;
        let fusion = if fused.is_some() { Fusion::Backward } else { Fusion::None };
        let storage = if fp8.is_some() { Storage::Fp8 } else { Storage::Native };
        let f16_math = fusion != Fusion::None && dense == DType::F16;
        let v = self.inner.kernels.variant(Op::Decompress, elem(dense), source.io(), fusion, storage, f16_math)?;
        let modes = Modes {
            sign_pack: Some(layout.options.sign_pack),
            act: fused.as_ref().map(|f| f.act.code()),
            all_full: false,
        };
        let k = self.shared_kernels(v.with_modes(modes), sharing)?;
        let base = DecompressParams {
            sign_pack: layout.options.sign_pack as u32,
            slot: source.slot_word(),
            act: fused.as_ref().map_or(0, |f| f.act.code()),
            write_a: fused.as_ref().is_some_and(|f| f.a_out.is_some()) as u32,
            fp8_fmt: fp8.map_or(0, Fp8Format::code),
            ..Default::default()
        };
        let mut pass = begin_pass(encoder, "bitsparse.decompress");
        let mut d = KernelDispatch::new(&self.inner.device, &mut pass, &k.main);
        for c in Self::chunks(layout, chunk_tiles) {
            let (binds, p) = self.decompress_chunk(&source, layout, placement, &c, base);
            d.bind(binds).bind(self.dense_bindings(&output, fused.as_ref(), &c, dense.bytes())).params(&p);
            d.dispatch(self.grid(c.tiles));
        }
        Ok(())
    }

    /// Checks a decompress's ranges; `dense` is the dense element type. Returns whether an input (the
    /// stream, or g) shares a buffer with an output. Records nothing.
    fn check_decompress(
        &self,
        source: &Source<'_>,
        layout: &Layout,
        dense: DType,
        output: &BufferRange<'_>,
        fused: Option<&FusedBackward<'_>>,
    ) -> Result<Sharing> {
        let dense_bytes = layout.n * dense.bytes();
        if output.size != dense_bytes {
            return Err(Error::InvalidArgument(format!(
                "decompress output range of {} bytes does not hold {} {} elements ({dense_bytes} bytes)",
                output.size, layout.n, dense,
            )));
        }
        self.check_range("decompress output", output)?;
        let (g, a_out) = match fused {
            Some(f) => (Some(&f.g), f.a_out.as_ref()),
            None => (None, None),
        };
        for (what, r) in [("fused backward gradient", g), ("fused backward activation", a_out)] {
            if let Some(r) = r {
                self.check_range(what, r)?;
                if r.size != dense_bytes {
                    return Err(Error::InvalidArgument(format!(
                        "{what} range must hold the tensor's {dense_bytes} bytes"
                    )));
                }
            }
        }
        let mut uses = Vec::with_capacity(4);
        match source {
            Source::Plain(c) => uses.push(Use {
                what: "compressed stream",
                buffer: &c.buffer,
                offset: c.offset,
                size: c.size,
                writes: false,
            }),
            Source::Arena { arena, .. } => {
                if [Some(output), g, a_out].into_iter().flatten().any(|r| r.buffer == *arena) {
                    return Err(Error::InvalidArgument("inputs and outputs must not live in the arena buffer".into()));
                }
            }
        }
        let out_name = if fused.is_some() { "fused backward dL/dz" } else { "decompress output" };
        uses.extend(g.map(|g| Use::read("fused backward gradient", g)));
        uses.push(Use::write(out_name, output));
        uses.extend(a_out.map(|a| Use::write("fused backward activation", a)));
        overlap::check(&uses)
    }

    /// Value words of the stream's values section a decompress may read.
    fn available_value_words(source: &Source<'_>, layout: &Layout) -> u64 {
        match source {
            Source::Plain(c) => c.size / 4 - layout.values_offset,
            Source::Arena { .. } => layout.values_capacity,
        }
    }

    /// Tiles per decompress chunk: the compress's chunks, or for a compact stream as many as one dense
    /// binding holds; an error where a chunk or a compact values section does not fit one binding.
    fn decompress_chunk_tiles(
        &self,
        source: &Source<'_>,
        layout: &Layout,
        placement: Placement,
        dense: DType,
    ) -> Result<u64> {
        let chunk_tiles = match placement {
            Placement::Chunked { chunk_tiles } => chunk_tiles,
            Placement::Compact => self.chunk_tiles(dense),
        };
        if chunk_tiles == 0 || chunk_tiles * TILE as u64 * dense.bytes() + self.inner.align > self.inner.max_binding {
            return Err(Error::Unsupported(format!("chunks of {chunk_tiles} tiles do not fit this device's bindings")));
        }
        if let (Placement::Compact, Source::Plain(_)) = (placement, source) {
            let words = Self::available_value_words(source, layout).min(layout.values_capacity);
            if words * 4 + self.inner.align > self.inner.max_binding {
                return Err(Error::Unsupported(
                    "compact stream's values section is larger than one binding: decompress it in pieces (host::decompress_to_vec does)".into(),
                ));
            }
        }
        Ok(chunk_tiles)
    }

    /// The stream bindings and the uniform of decompress chunk `c`.
    fn decompress_chunk<'b>(
        &self,
        source: &Source<'b>,
        layout: &Layout,
        placement: Placement,
        c: &Chunk,
        base: DecompressParams,
    ) -> (Vec<(&'static str, wgpu::BufferBinding<'b>)>, DecompressParams) {
        let mask_word = layout.mask_offset + c.first * format::TILE_MASK_WORDS as u64;
        let (binds, mask_idx, val_idx, win_base) = match source {
            Source::Plain(cmp) => {
                let elems = c.full_tiles * TILE as u64 + c.tail_len;
                let meta = format::HEADER_WORDS as u64 + layout.tiles;
                let size = wgpu::BufferSize::new(meta * 4);
                let head = wgpu::BufferBinding { buffer: &cmp.buffer, offset: cmp.offset, size };
                let (mask_b, mask_idx) = self.window(&cmp.buffer, cmp.offset + mask_word * 4, elems.div_ceil(32));
                let available = Self::available_value_words(source, layout);
                let (win_base, win_words) = match placement {
                    Placement::Chunked { .. } => {
                        let cap: u64 = (c.first..c.first + c.tiles).map(|t| layout.tile_capacity_words(t)).sum();
                        (layout.chunk_value_base(c.first), cap)
                    }
                    Placement::Compact => (0, available.min(layout.values_capacity)),
                };
                let win_words = win_words.min(available.saturating_sub(win_base));
                let (vals_b, val_idx) =
                    self.window(&cmp.buffer, cmp.offset + (layout.values_offset + win_base) * 4, win_words);
                (vec![("head", head), ("mask_in", mask_b), ("vals_in", vals_b)], mask_idx, val_idx, win_base)
            }
            Source::Arena { arena, ctrl, .. } => {
                let binds =
                    vec![("arena", arena.as_entire_buffer_binding()), ("ctrl", ctrl.as_entire_buffer_binding())];
                (binds, mask_word as u32, layout.values_offset as u32, 0)
            }
        };
        let p = DecompressParams {
            tiles: c.tiles as u32,
            full_tiles: c.full_tiles as u32,
            tail_len: c.tail_len as u32,
            table_idx: (format::HEADER_WORDS as u64 + c.first) as u32,
            mask_idx,
            val_idx,
            val_base: win_base as u32,
            hdr_idx: 0,
            ..base
        };
        (binds, p)
    }

    /// The dense bindings of decompress chunk `c`: the output and, for the fused backward, g and a (or
    /// dummies where a is not wanted).
    fn dense_bindings<'b>(
        &'b self,
        output: &BufferRange<'b>,
        fused: Option<&FusedBackward<'b>>,
        c: &Chunk,
        eb: u64,
    ) -> Vec<(&'static str, wgpu::BufferBinding<'b>)> {
        let rw = self.inner.dummy_rw.as_entire_buffer_binding();
        let (dst4, dst_tail) = self.dense_windows(output, c, eb, &rw);
        let mut binds = vec![("dst4", dst4), ("dst_tail", dst_tail)];
        if let Some(f) = fused {
            let (g4, g_tail) = self.dense_windows(&f.g, c, eb, &self.inner.dummy_ro.as_entire_buffer_binding());
            let (a4, a_tail) = match &f.a_out {
                Some(a) => self.dense_windows(a, c, eb, &rw),
                None => {
                    (self.inner.dummy_rw2.as_entire_buffer_binding(), self.inner.dummy_rw3.as_entire_buffer_binding())
                }
            };
            binds.extend([("g4", g4), ("g_tail", g_tail), ("a4", a4), ("a_tail", a_tail)]);
        }
        binds
    }
}

/// The index of the version-2 pipelines of `dtype`'s width built for `modes` (sign packing fixed).
fn v2_slot(dtype: DType, modes: Modes) -> usize {
    let width = match dtype.bits() {
        8 => 0,
        32 => 2,
        _ => 1,
    };
    width * 4 + 2 * modes.sign_pack.unwrap_or(false) as usize + modes.all_full as usize
}

/// The element width of dense `dtype`.
fn elem(dtype: DType) -> Elem {
    match dtype.bits() {
        8 => Elem::Bits8,
        32 => Elem::Bits32,
        _ => Elem::Bits16,
    }
}

/// Where a compress writes.
pub(crate) enum Target<'a> {
    /// A caller's stream range.
    Plain(BufferRange<'a>),
    /// The arena, at the base recorded in slot descriptor `slot_word` of `ctrl`; with the fused forward
    /// `(activation, dense output)` when set. `fp8`: FP8 storage (needs `fused`): the input is BF16 and
    /// the layout's dtype is the stream's e4m3/e5m2.
    Arena {
        arena: &'a wgpu::Buffer,
        ctrl: &'a wgpu::Buffer,
        slot_word: u32,
        fused: Option<(Activation, BufferRange<'a>)>,
        fp8: Option<Fp8Format>,
    },
}

impl Target<'_> {
    /// The kernel choices this target takes.
    fn kind(&self) -> (Io, Fusion, Storage) {
        match self {
            Target::Plain(_) => (Io::Buffer, Fusion::None, Storage::Native),
            Target::Arena { fused, fp8, .. } => (
                Io::Arena,
                if fused.is_some() { Fusion::Forward } else { Fusion::None },
                if fp8.is_some() { Storage::Fp8 } else { Storage::Native },
            ),
        }
    }
    fn slot_word(&self) -> u32 {
        match self {
            Target::Arena { slot_word, .. } => *slot_word,
            Target::Plain(_) => 0,
        }
    }
    fn act(&self) -> Option<Activation> {
        match self {
            Target::Arena { fused: Some((act, _)), .. } => Some(*act),
            _ => None,
        }
    }
    fn fp8(&self) -> Option<Fp8Format> {
        match self {
            Target::Arena { fp8, .. } => *fp8,
            Target::Plain(_) => None,
        }
    }
}

/// Where a decompress reads.
pub(crate) enum Source<'a> {
    /// A caller's stream.
    Plain(&'a Compressed),
    /// The arena slot descriptor `slot_word` of `ctrl`.
    Arena { arena: &'a wgpu::Buffer, ctrl: &'a wgpu::Buffer, slot_word: u32 },
}

impl Source<'_> {
    fn io(&self) -> Io {
        match self {
            Source::Plain(_) => Io::Buffer,
            Source::Arena { .. } => Io::Arena,
        }
    }
    fn slot_word(&self) -> u32 {
        match self {
            Source::Arena { slot_word, .. } => *slot_word,
            Source::Plain(_) => 0,
        }
    }
}

/// The fused backward's extra operands.
pub(crate) struct FusedBackward<'a> {
    /// The activation of the forward.
    pub act: Activation,
    /// g = dL/da.
    pub g: BufferRange<'a>,
    /// Where to write the dense a, if wanted.
    pub a_out: Option<BufferRange<'a>>,
    /// FP8 storage: the stream holds e4m3/e5m2 codes, g / dL/dz / a are BF16.
    pub fp8: Option<Fp8Format>,
}
