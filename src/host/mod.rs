//! The host side: [`sync`] (the one module that submits, polls and maps, counted), [`context`] (opening
//! an instance, an adapter and a device) and, here, blocking helpers that move data between host memory
//! and the GPU codec: they **submit and read back**, so they are for tests, the CLI and tools, never for
//! a training step.
//!
//! Large inputs are processed in pieces of whole tiles that fit the device's buffer limits, and the
//! pieces' streams are merged on the host into one compact stream (the format makes that a
//! concatenation: masks and values append, table entries shift).

pub mod context;
pub mod sync;

use wgpu::util::DeviceExt;

use crate::codec::{BufferRange, Codec, Compressed, Placement};
use crate::error::{Error, Result};
use crate::format::{self, status, DType, Header, Layout, Options, TILE};

/// Largest piece (dense bytes) one GPU round trip handles.
fn piece_tiles(codec: &Codec, dtype: DType) -> u64 {
    let limits = codec.device().limits();
    // Input, output (about as large) and staging copies must each fit max_buffer_size; keep pieces
    // moderate so host memory stays bounded too.
    let cap = (limits.max_buffer_size / 2).min(256 << 20);
    (cap / (TILE as u64 * dtype.bytes())).max(1)
}

fn le_words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}

fn words_to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Reads the header of a compressed tensor (blocking).
pub fn read_header(device: &wgpu::Device, queue: &wgpu::Queue, c: &Compressed) -> Result<Header> {
    let bytes = sync::read_buffer(device, queue, &c.buffer, c.offset, format::HEADER_BYTES)?;
    let (_, h) = Layout::from_header(&le_words(&bytes))?;
    Ok(h)
}

/// Turns header status bits into the matching error.
pub fn check_status(h: &Header, layout: &Layout) -> Result<()> {
    if h.status & status::SIGN_BIT_SET != 0 {
        return Err(Error::SignBitSet { index: None });
    }
    if h.status & status::OVERFLOW != 0 {
        return Err(Error::ArenaOverflow { needed: layout.capacity_bytes(), capacity: 0 });
    }
    if h.status != 0 {
        return Err(Error::Corrupt(format!("stream status bits {:#x}", h.status)));
    }
    Ok(())
}

/// Reads a compressed tensor back as compact stream bytes (blocking).
pub fn read_compressed(device: &wgpu::Device, queue: &wgpu::Queue, c: &Compressed) -> Result<Vec<u8>> {
    let h = read_header(device, queue, c)?;
    check_status(&h, &c.layout)?;
    let l = &c.layout;
    match c.placement {
        Placement::Compact => {
            sync::read_buffer(device, queue, &c.buffer, c.offset, l.compact_bytes(h.value_words as u64))
        }
        Placement::Chunked { .. } => {
            let raw = sync::read_buffer(
                device,
                queue,
                &c.buffer,
                c.offset,
                (l.values_offset * 4 + h.value_words as u64 * 4).min(c.size),
            )?;
            compact_stream(&raw)
        }
    }
}

/// Rewrites a valid stream (gaps or tiles out of order allowed) into the compact form.
pub fn compact_stream(stream: &[u8]) -> Result<Vec<u8>> {
    crate::cpu::compact(stream)
}

/// Compresses `data` (little-endian elements of `dtype`) on the GPU; returns the compact stream.
pub fn compress_to_vec(
    codec: &Codec,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    data: &[u8],
    dtype: DType,
    options: Options,
) -> Result<Vec<u8>> {
    let eb = dtype.bytes() as usize;
    let n = element_count(data, dtype)?;
    let piece = piece_tiles(codec, dtype) * TILE as u64;
    let mut pieces = Vec::new();
    let mut start = 0u64;
    loop {
        let len = piece.min(n - start);
        let bytes = &data[(start as usize * eb)..((start + len) as usize * eb)];
        pieces.push(compress_piece(codec, device, queue, bytes, dtype, len, options).map_err(|e| match e {
            Error::SignBitSet { .. } => Error::SignBitSet { index: first_sign_bit(data, dtype) },
            e => e,
        })?);
        start += len;
        if start >= n {
            break;
        }
    }
    if pieces.len() == 1 {
        return Ok(pieces.pop().unwrap_or_default());
    }
    merge(&pieces, dtype, n, options)
}

/// Compresses `data` on the GPU into the canonical format-version-2 stream (docs/FORMAT.md §14.6),
/// byte-identical to `cpu::compress_v2` (unless the codec's kernel constants set the writer's
/// `compress_v2.POSITIONS_GAIN`, an A/B of tile choices, to another value than
/// [`crate::format::v2::POSITIONS_GAIN`]): [`Codec::compress_v2`] on pieces of whole tiles that fit one
/// binding, each piece's stream read back and validated completely, its tiles then laid out in order
/// (group bases, no gaps) by the host. Errors as [`compress_to_vec`]'s; a stream the GPU wrote wrongly
/// would be `Error::Corrupt`, never a silent wrong answer.
pub fn compress_v2_to_vec(
    codec: &Codec,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    data: &[u8],
    dtype: DType,
    options: Options,
) -> Result<Vec<u8>> {
    use format::v2::{tile_capacity_words, LayoutV2};
    let eb = dtype.bytes();
    let n = element_count(data, dtype)?;
    let layout = LayoutV2::new(dtype, n, options, false)?;
    // Tiles per piece: the dense piece and its worst-case stream (a descriptor and a start per tile,
    // the header) must each fit one binding.
    let per_tile = ((tile_capacity_words(dtype, options.sign_pack, TILE) + 2) * 4).max(TILE as u64 * eb);
    let tiles = (codec.max_binding().saturating_sub(64) / per_tile).min(piece_tiles(codec, dtype));
    if tiles == 0 {
        return Err(Error::Unsupported("the storage binding limit is below one tile's worst case".into()));
    }
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    for bytes in data.chunks((tiles * TILE as u64 * eb) as usize) {
        let pn = bytes.len() as u64 / eb;
        let pl = LayoutV2::new(dtype, pn, options, true)?;
        let input = storage_buffer(device, "bitsparse.host.dense", bytes, wgpu::BufferUsages::empty());
        let output = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.host.stream_v2"),
            size: pl.capacity_bytes(),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut enc = device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.host.compress_v2") });
        codec.compress_v2(
            &mut enc,
            BufferRange::new(&input, 0, bytes.len() as u64),
            dtype,
            pn,
            options,
            BufferRange::new(&output, 0, pl.capacity_bytes()),
        )?;
        sync::submit(queue, [enc.finish()]);
        let head = le_words(&sync::read_buffer(device, queue, &output, 0, format::HEADER_BYTES)?);
        let data_words = u64::from(head[4]).min(pl.data_capacity);
        pieces.push(sync::read_buffer(device, queue, &output, 0, pl.stream_bytes(data_words))?);
    }
    let mut parsed = Vec::with_capacity(pieces.len());
    for p in &pieces {
        parsed.push(crate::cpu::v2::parse_v2(p).map_err(|e| match e {
            Error::SignBitSet { .. } => Error::SignBitSet { index: first_sign_bit(data, dtype) },
            e => e,
        })?);
    }
    let refs: Vec<(format::v2::TileDesc, &[u8])> =
        parsed.iter().flat_map(|p| (0..p.descs.len()).map(move |t| (p.descs[t], p.tile_data(t)))).collect();
    crate::cpu::v2::assemble(&layout, &refs, 0, 0)
}

/// The elements of `dtype` in `data`: `Error::PartialElement` if it ends inside one.
fn element_count(data: &[u8], dtype: DType) -> Result<u64> {
    let eb = dtype.bytes();
    if data.len() as u64 % eb != 0 {
        return Err(Error::PartialElement { bytes: data.len() as u64, elem_bytes: eb });
    }
    Ok(data.len() as u64 / eb)
}

fn first_sign_bit(data: &[u8], dtype: DType) -> Option<u64> {
    match dtype.bits() {
        32 => data.chunks_exact(4).position(|c| c[3] & 0x80 != 0),
        16 => data.chunks_exact(2).position(|c| c[1] & 0x80 != 0),
        _ => data.iter().position(|&b| b & 0x80 != 0),
    }
    .map(|i| i as u64)
}

fn storage_buffer(device: &wgpu::Device, label: &str, contents: &[u8], extra: wgpu::BufferUsages) -> wgpu::Buffer {
    // Whole words plus slack, so word-granular bindings never pass the end.
    let mut padded = contents.to_vec();
    padded.resize(contents.len().div_ceil(4) * 4 + 16, 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &padded,
        usage: wgpu::BufferUsages::STORAGE | extra,
    })
}

fn compress_piece(
    codec: &Codec,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    bytes: &[u8],
    dtype: DType,
    n: u64,
    options: Options,
) -> Result<Vec<u8>> {
    let input = storage_buffer(device, "bitsparse.host.input", bytes, wgpu::BufferUsages::empty());
    let cap = codec.output_capacity(dtype, n, options)?;
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bitsparse.host.stream"),
        size: cap.div_ceil(4) * 4 + 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut enc =
        device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.host.compress") });
    let c = codec.compress(
        &mut enc,
        BufferRange::new(&input, 0, bytes.len() as u64),
        dtype,
        n,
        options,
        BufferRange::new(&output, 0, cap),
    )?;
    sync::submit(queue, [enc.finish()]);
    read_compressed(device, queue, &c)
}

/// Concatenates compact streams of consecutive pieces (each a whole number of tiles but the last).
fn merge(pieces: &[Vec<u8>], dtype: DType, n: u64, options: Options) -> Result<Vec<u8>> {
    let layout = Layout::new(dtype, n, options)?;
    let mut table = Vec::with_capacity(layout.tiles as usize);
    let mut mask = Vec::with_capacity(layout.mask_words as usize);
    let mut values: Vec<u32> = Vec::new();
    for p in pieces {
        let w = le_words(p);
        let (pl, ph) = Layout::from_header(&w)?;
        let vbase = values.len() as u32;
        table.extend(w[pl.table_offset as usize..pl.mask_offset as usize].iter().map(|o| o + vbase));
        mask.extend_from_slice(&w[pl.mask_offset as usize..pl.values_offset as usize]);
        values.extend_from_slice(&w[pl.values_offset as usize..(pl.values_offset + ph.value_words as u64) as usize]);
    }
    let mut out = layout.header(values.len() as u32, 0, 0, 0).to_vec();
    out.extend(table);
    out.extend(mask);
    out.extend(values);
    Ok(words_to_bytes(&out))
}

/// Splits a compact stream into pieces of `piece_tiles` tiles, each a valid compact stream.
fn split(words: &[u32], layout: &Layout, header: &Header, piece_tiles: u64) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut first = 0u64;
    while first < layout.tiles {
        let tiles = piece_tiles.min(layout.tiles - first);
        let n = (layout.n - first * TILE as u64).min(tiles * TILE as u64);
        let Ok(pl) = Layout::new(layout.dtype, n, layout.options) else { break };
        let t0 = (layout.table_offset + first) as usize;
        let v0 = words[t0];
        let v1 = if first + tiles < layout.tiles { words[t0 + tiles as usize] } else { header.value_words };
        let mut w = pl.header(v1 - v0, 0, 0, 0).to_vec();
        w.extend(words[t0..t0 + tiles as usize].iter().map(|o| o - v0));
        let m0 = (layout.mask_offset + first * format::TILE_MASK_WORDS as u64) as usize;
        w.extend_from_slice(&words[m0..m0 + pl.mask_words as usize]);
        let vs = (layout.values_offset + v0 as u64) as usize;
        w.extend_from_slice(&words[vs..vs + (v1 - v0) as usize]);
        out.push(w);
        first += tiles;
    }
    out
}

/// Splits a valid ordered version-2 stream into valid streams of `groups` tile groups each.
fn split_v2(stream: &[u8], groups: u64) -> Result<Vec<(format::v2::LayoutV2, Vec<u8>)>> {
    use format::v2::{LayoutV2, GROUP_TILES};
    let w = le_words(stream);
    let (l, h) = LayoutV2::from_header(&w)?;
    let g_count = l.dir_words;
    let mut out = Vec::new();
    let mut g0 = 0u64;
    while g0 < g_count {
        let g1 = (g0 + groups).min(g_count);
        let (t0, t1) = (g0 * GROUP_TILES, (g1 * GROUP_TILES).min(l.tiles));
        let n = (l.n - t0 * TILE as u64).min((t1 - t0) * TILE as u64);
        let pl = LayoutV2::new(l.dtype, n, l.options, false)?;
        let d0 = w[(l.dir_offset + g0) as usize] as u64;
        let d1 = if g1 < g_count { w[(l.dir_offset + g1) as usize] as u64 } else { h.value_words as u64 };
        let mut piece = pl.header((d1 - d0) as u32, 0, 0, 0).to_vec();
        piece.extend_from_slice(&w[(l.desc_offset + t0) as usize..(l.desc_offset + t1) as usize]);
        piece.extend(w[(l.dir_offset + g0) as usize..(l.dir_offset + g1) as usize].iter().map(|b| b - d0 as u32));
        piece.extend_from_slice(&w[(l.data_offset + d0) as usize..(l.data_offset + d1) as usize]);
        out.push((pl, words_to_bytes(&piece)));
        g0 = g1;
    }
    Ok(out)
}

/// Decompresses a version-2 stream on the GPU (validated and compacted on the host first).
fn decompress_v2_to_vec(codec: &Codec, device: &wgpu::Device, queue: &wgpu::Queue, stream: &[u8]) -> Result<Vec<u8>> {
    use format::v2::{tile_capacity_words, GROUP_TILES};
    // `compact` validates the stream completely (FORMAT.md §14.7) before it rewrites it.
    let compact = crate::cpu::compact(stream)?;
    let info = format::StreamInfo::from_bytes(&compact)?;
    let eb = info.dtype.bytes();
    // Whole groups whose worst-case stream and dense output each fit one binding (and the piece cap).
    let per_tile = (tile_capacity_words(info.dtype, info.options.sign_pack, TILE) + 2) * 4;
    let cap = codec.max_binding().saturating_sub(4096).min(piece_tiles(codec, info.dtype) * TILE as u64 * eb);
    let groups = (cap / (GROUP_TILES * per_tile.max(TILE as u64 * eb))).max(1);
    let mut out = Vec::with_capacity((info.n * eb) as usize);
    for (pl, bytes) in split_v2(&compact, groups)? {
        let dense = pl.n * eb;
        if dense == 0 {
            continue;
        }
        let input = storage_buffer(device, "bitsparse.host.stream_v2", &bytes, wgpu::BufferUsages::empty());
        let output = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bitsparse.host.dense"),
            size: dense.div_ceil(4) * 4,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut enc = device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.host.decompress_v2") });
        codec.decompress_v2(
            &mut enc,
            &pl,
            BufferRange::new(&input, 0, bytes.len() as u64),
            BufferRange::new(&output, 0, dense),
        )?;
        sync::submit(queue, [enc.finish()]);
        out.extend(sync::read_buffer(device, queue, &output, 0, dense)?);
    }
    Ok(out)
}

/// Decompresses a stream of either format version (validated on the host first) on the GPU; returns
/// the dense bytes.
pub fn decompress_to_vec(codec: &Codec, device: &wgpu::Device, queue: &wgpu::Queue, stream: &[u8]) -> Result<Vec<u8>> {
    if format::v2::stream_version(stream) == Some(format::v2::VERSION) {
        return decompress_v2_to_vec(codec, device, queue, stream);
    }
    crate::cpu::validate(stream)?;
    let compact = crate::cpu::compact(stream)?;
    let words = le_words(&compact);
    let (layout, header) = Layout::from_header(&words)?;
    check_status(&header, &layout)?;
    let mut out = Vec::with_capacity(layout.dense_bytes() as usize);
    // Pieces whose compact values section fits one binding (a compact stream's values are bound whole).
    let tiles = piece_tiles(codec, layout.dtype).min(codec.chunk_tiles(layout.dtype));
    for piece in split(&words, &layout, &header, tiles) {
        let bytes = words_to_bytes(&piece);
        let (pl, _) = Layout::from_header(&piece)?;
        out.extend(decompress_piece(codec, device, queue, &bytes, &pl)?);
    }
    Ok(out)
}

fn decompress_piece(
    codec: &Codec,
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    stream: &[u8],
    layout: &Layout,
) -> Result<Vec<u8>> {
    let dense = layout.dense_bytes();
    if dense == 0 {
        return Ok(Vec::new());
    }
    let input = storage_buffer(device, "bitsparse.host.stream", stream, wgpu::BufferUsages::empty());
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("bitsparse.host.dense"),
        size: dense.div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let c = Compressed {
        layout: *layout,
        buffer: input.clone(),
        offset: 0,
        size: input.size(),
        placement: Placement::Compact,
    };
    let mut enc =
        device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.host.decompress") });
    codec.decompress(&mut enc, &c, BufferRange::new(&output, 0, dense))?;
    sync::submit(queue, [enc.finish()]);
    sync::read_buffer(device, queue, &output, 0, dense)
}

/// Uploads a compact stream into a new GPU buffer, returning its handle (blocking only in the sense
/// that buffer creation copies the bytes).
pub fn upload(device: &wgpu::Device, stream: &[u8]) -> Result<Compressed> {
    let words = le_words(stream);
    let (layout, _) = Layout::from_header(&words)?;
    let buffer = storage_buffer(device, "bitsparse.host.upload", stream, wgpu::BufferUsages::COPY_SRC);
    Ok(Compressed { layout, buffer: buffer.clone(), offset: 0, size: buffer.size(), placement: Placement::Compact })
}
