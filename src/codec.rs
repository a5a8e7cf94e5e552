//! The embedding API: compress and decompress GPU buffer ranges into the caller's command encoder.
//!
//! [`Codec`] borrows the caller's device (wgpu handles are reference counted) and builds its pipelines
//! once. `compress` / `decompress` only *record*: they never submit, map or poll, so they can sit on a
//! training step's hot path. Sizes the host cannot know (how many values a tensor has) stay on the GPU,
//! in the stream's header; the host reads them only when it chooses to (see [`crate::host`]).

use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

use crate::error::{Error, Result};
use crate::format::{self, DType, Layout, Options, TILE};
pub use crate::kernels::Path;
use crate::kernels::Kernels;

/// A byte range of a buffer: what the codec reads or writes. The buffer needs `STORAGE` usage; `offset`
/// must be a multiple of the device's `min_storage_buffer_offset_alignment`; the buffer must extend to
/// the range's end rounded up to 4 bytes (kernels access whole 32-bit words and preserve bytes past the
/// range's end).
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
}

/// Where the value streams of a compressed tensor lie inside its values section.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Tiles in order with no gaps (one-chunk GPU compress, CPU compress).
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

#[derive(Copy, Clone, Debug, bytemuck::Pod, bytemuck::Zeroable, Default)]
#[repr(C)]
struct Params {
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
        let path = if !config.force_portable && device.features().contains(wgpu::Features::SUBGROUP) {
            Path::Subgroup
        } else {
            Path::Portable
        };
        let kernels = Kernels::new(device, path, config.spin_limit)?;
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
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: 256, usage, mapped_at_creation: false })
        };
        let dummy_ro = dummy("bitsparse.dummy_ro", wgpu::BufferUsages::STORAGE);
        let dummy_rw = dummy("bitsparse.dummy_rw", wgpu::BufferUsages::STORAGE);
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
            }),
        })
    }

    /// The path the kernels use.
    pub fn path(&self) -> Path {
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

    fn params(&self, p: &Params) -> wgpu::Buffer {
        self.inner.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bitsparse.params"),
            contents: bytemuck::bytes_of(p),
            usage: wgpu::BufferUsages::UNIFORM,
        })
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

    fn grid(&self, groups: u64) -> (u32, u32) {
        let x = groups.min(self.inner.max_wg_dim as u64).max(1);
        (x as u32, groups.div_ceil(x) as u32)
    }

    /// Records the compression of `n` elements of `dtype` read from `input` into the stream range
    /// `output` (at least [`Codec::output_capacity`] bytes). Nothing is submitted.
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
        let layout = Layout::new(dtype, n, options)?;
        if input.size != layout.dense_bytes() {
            return Err(Error::InvalidArgument(format!(
                "input range of {} bytes does not hold {n} {dtype} elements ({} bytes)",
                input.size,
                layout.dense_bytes()
            )));
        }
        self.check_range("compress input", &input)?;
        self.check_range("compress output", &output)?;
        if output.size < layout.capacity_bytes() {
            return Err(Error::RangeTooSmall { what: "compress output", need: layout.capacity_bytes(), got: output.size });
        }
        if input.buffer == output.buffer {
            return Err(Error::InvalidArgument("compress input and output must be in different buffers".into()));
        }
        let chunk_tiles = self.chunk_tiles(dtype);
        let chunks = Self::chunks(&layout, chunk_tiles);
        let placement = if chunks.len() > 1 { Placement::Chunked { chunk_tiles } } else { Placement::Compact };
        let k = self.inner.kernels.width(dtype.bits());
        let eb = dtype.bytes();
        let scan = self.scan_buffer(SCAN_HEAD_WORDS + chunk_tiles.min(layout.tiles.max(1)));
        let meta_words = format::HEADER_WORDS as u64 + layout.tiles;
        let meta = wgpu::BufferBinding { buffer: output.buffer, offset: output.offset, size: wgpu::BufferSize::new(meta_words * 4) };

        let mut base_params = Params {
            sign_pack: options.sign_pack as u32,
            info: layout.info_word(),
            n_lo: n as u32,
            n_hi: (n >> 32) as u32,
            ..Default::default()
        };
        let device = &self.inner.device;
        let mut last_bind = None;
        for (ci, c) in chunks.iter().enumerate() {
            // The scan state is per chunk; status bits (word 0) accumulate over the chunks.
            let clear_from = if ci == 0 { 0 } else { 4 };
            encoder.clear_buffer(&scan, clear_from, Some((SCAN_HEAD_WORDS + c.tiles) * 4 - clear_from));
            let in_start = input.offset + c.first * TILE as u64 * eb;
            let src4 = if c.full_tiles > 0 {
                wgpu::BufferBinding { buffer: input.buffer, offset: in_start, size: wgpu::BufferSize::new(c.full_tiles * TILE as u64 * eb) }
            } else {
                self.inner.dummy_ro.as_entire_buffer_binding()
            };
            let src_tail = if c.tail_len > 0 {
                let off = in_start + c.full_tiles * TILE as u64 * eb;
                wgpu::BufferBinding { buffer: input.buffer, offset: off, size: wgpu::BufferSize::new((c.tail_len * eb).div_ceil(4) * 4) }
            } else {
                self.inner.dummy_ro.as_entire_buffer_binding()
            };
            let elems = c.full_tiles * TILE as u64 + c.tail_len;
            let (mask_b, mask_idx) = self.window(
                output.buffer,
                output.offset + (layout.mask_offset + c.first * format::TILE_MASK_WORDS as u64) * 4,
                elems.div_ceil(32),
            );
            let val_base = layout.chunk_value_base(c.first);
            let cap: u64 = (c.first..c.first + c.tiles).map(|t| layout.tile_capacity_words(t)).sum();
            let (vals_b, val_idx) = self.window(output.buffer, output.offset + (layout.values_offset + val_base) * 4, cap);
            base_params = Params {
                tiles: c.tiles as u32,
                full_tiles: c.full_tiles as u32,
                tail_len: c.tail_len as u32,
                table_idx: (format::HEADER_WORDS as u64 + c.first) as u32,
                mask_idx,
                val_idx,
                val_base: val_base as u32,
                hdr_idx: 0,
                ..base_params
            };
            let pbuf = self.params(&base_params);
            let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("bitsparse.compress"),
                layout: &self.inner.kernels.compress_layout,
                entries: &[
                    entry(0, src4),
                    entry(1, src_tail),
                    entry(2, meta.clone()),
                    entry(3, mask_b),
                    entry(4, vals_b),
                    entry(5, scan.as_entire_buffer_binding()),
                    entry(6, pbuf.as_entire_buffer_binding()),
                ],
            });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("bitsparse.compress"), timestamp_writes: None });
            pass.set_pipeline(&k.compress);
            pass.set_bind_group(0, &bind, &[]);
            let (x, y) = self.grid(c.tiles);
            pass.dispatch_workgroups(x, y, 1);
            drop(pass);
            last_bind = Some(bind);
        }
        // The header, from the last chunk's scan state (or an empty tensor's).
        let bind = match last_bind {
            Some(b) => b,
            None => {
                encoder.clear_buffer(&scan, 0, Some(SCAN_HEAD_WORDS * 4));
                let pbuf = self.params(&base_params);
                let ro = self.inner.dummy_ro.as_entire_buffer_binding();
                let rw = self.inner.dummy_rw.as_entire_buffer_binding();
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("bitsparse.compress.empty"),
                    layout: &self.inner.kernels.compress_layout,
                    entries: &[
                        entry(0, ro.clone()),
                        entry(1, ro),
                        entry(2, meta.clone()),
                        entry(3, rw.clone()),
                        entry(4, rw),
                        entry(5, scan.as_entire_buffer_binding()),
                        entry(6, pbuf.as_entire_buffer_binding()),
                    ],
                })
            }
        };
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("bitsparse.finish"), timestamp_writes: None });
        pass.set_pipeline(&k.finish);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(1, 1, 1);
        drop(pass);
        Ok(Compressed { layout, buffer: output.buffer.clone(), offset: output.offset, size: output.size, placement })
    }

    /// Records the decompression of `compressed` into the dense range `output` (exactly the tensor's
    /// dense bytes). Nothing is submitted. A stream whose header has status bits set is left unwritten.
    pub fn decompress(&self, encoder: &mut wgpu::CommandEncoder, compressed: &Compressed, output: BufferRange<'_>) -> Result<()> {
        let layout = &compressed.layout;
        if output.size != layout.dense_bytes() {
            return Err(Error::InvalidArgument(format!(
                "decompress output range of {} bytes does not hold {} {} elements ({} bytes)",
                output.size,
                layout.n,
                layout.dtype,
                layout.dense_bytes()
            )));
        }
        self.check_range("decompress output", &output)?;
        let src = BufferRange { buffer: &compressed.buffer, offset: compressed.offset, size: compressed.size };
        self.check_range("compressed stream", &src)?;
        if compressed.size < layout.values_offset * 4 {
            return Err(Error::RangeTooSmall { what: "compressed stream", need: layout.values_offset * 4, got: compressed.size });
        }
        if compressed.buffer == *output.buffer {
            return Err(Error::InvalidArgument("decompress input and output must be in different buffers".into()));
        }
        if layout.tiles == 0 {
            return Ok(());
        }
        let eb = layout.dtype.bytes();
        let chunk_tiles = match compressed.placement {
            Placement::Chunked { chunk_tiles } => chunk_tiles,
            Placement::Compact => self.chunk_tiles(layout.dtype),
        };
        if chunk_tiles == 0 || chunk_tiles * TILE as u64 * eb + self.inner.align > self.inner.max_binding {
            return Err(Error::Unsupported(format!("chunks of {chunk_tiles} tiles do not fit this device's bindings")));
        }
        let available_value_words = compressed.size / 4 - layout.values_offset;
        if let Placement::Compact = compressed.placement {
            if available_value_words.min(layout.values_capacity) * 4 + self.inner.align > self.inner.max_binding {
                return Err(Error::Unsupported(
                    "compact stream's values section is larger than one binding: decompress it in pieces (host::decompress_to_vec does)".into(),
                ));
            }
        }
        let k = self.inner.kernels.width(layout.dtype.bits());
        let device = &self.inner.device;
        let meta_words = format::HEADER_WORDS as u64 + layout.tiles;
        let meta = wgpu::BufferBinding { buffer: src.buffer, offset: src.offset, size: wgpu::BufferSize::new(meta_words * 4) };
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("bitsparse.decompress"), timestamp_writes: None });
        pass.set_pipeline(&k.decompress);
        for c in Self::chunks(layout, chunk_tiles) {
            let elems = c.full_tiles * TILE as u64 + c.tail_len;
            let (mask_b, mask_idx) = self.window(
                src.buffer,
                src.offset + (layout.mask_offset + c.first * format::TILE_MASK_WORDS as u64) * 4,
                elems.div_ceil(32),
            );
            let (win_base, win_words) = match compressed.placement {
                Placement::Chunked { .. } => {
                    let cap: u64 = (c.first..c.first + c.tiles).map(|t| layout.tile_capacity_words(t)).sum();
                    (layout.chunk_value_base(c.first), cap)
                }
                Placement::Compact => (0, available_value_words.min(layout.values_capacity)),
            };
            let win_words = win_words.min(available_value_words.saturating_sub(win_base));
            let (vals_b, val_idx) = self.window(src.buffer, src.offset + (layout.values_offset + win_base) * 4, win_words);
            let out_start = output.offset + c.first * TILE as u64 * eb;
            let dst4 = if c.full_tiles > 0 {
                wgpu::BufferBinding { buffer: output.buffer, offset: out_start, size: wgpu::BufferSize::new(c.full_tiles * TILE as u64 * eb) }
            } else {
                self.inner.dummy_rw.as_entire_buffer_binding()
            };
            let dst_tail = if c.tail_len > 0 {
                let off = out_start + c.full_tiles * TILE as u64 * eb;
                wgpu::BufferBinding { buffer: output.buffer, offset: off, size: wgpu::BufferSize::new((c.tail_len * eb).div_ceil(4) * 4) }
            } else {
                self.inner.dummy_rw.as_entire_buffer_binding()
            };
            let p = Params {
                tiles: c.tiles as u32,
                full_tiles: c.full_tiles as u32,
                tail_len: c.tail_len as u32,
                sign_pack: layout.options.sign_pack as u32,
                table_idx: (format::HEADER_WORDS as u64 + c.first) as u32,
                mask_idx,
                val_idx,
                val_base: win_base as u32,
                hdr_idx: 0,
                ..Default::default()
            };
            let pbuf = self.params(&p);
            let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("bitsparse.decompress"),
                layout: &self.inner.kernels.decompress_layout,
                entries: &[
                    entry(0, meta.clone()),
                    entry(1, mask_b),
                    entry(2, vals_b),
                    entry(3, dst4),
                    entry(4, dst_tail),
                    entry(5, pbuf.as_entire_buffer_binding()),
                ],
            });
            pass.set_bind_group(0, &bind, &[]);
            let (x, y) = self.grid(c.tiles);
            pass.dispatch_workgroups(x, y, 1);
        }
        Ok(())
    }
}

fn entry(binding: u32, b: wgpu::BufferBinding<'_>) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry { binding, resource: wgpu::BindingResource::Buffer(b) }
}
