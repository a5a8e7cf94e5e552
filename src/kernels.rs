//! Compute pipelines of the codec, built once per device and variant, with bind-group layouts built from
//! the shaders' reflected interfaces ([`crate::dispatch::Program`]).
//!
//! A [`Variant`] is a typed description of one kernel ([`Op`], [`Elem`], [`Io`], [`Fusion`], [`Storage`],
//! [`Stage`], [`Sharing`]); invalid combinations are refused ([`VariantError`]). It is chosen textually (see
//! [`crate::shaders`]): `BITS8` for 8-bit element types, `SUBGROUP` for the fast path where the device has
//! `Features::SUBGROUP`, `ARENA` for streams inside the GPU arena (their position is known only on the
//! GPU), `FUSED_FWD` / `FUSED_BWD` for the fused activation kernels (BF16 math on 16-bit elements, F16
//! math with `ACT_F16`, F32 math with `BITS32`), `FP8_STORE` (with one of them) for FP8 storage of their
//! BF16 activation, `STAGE16` for compress's `u16` staging, `SHARED_IO` for caller inputs that share a
//! buffer with an output (declared `read_write`, [`Sharing`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::dispatch::{Kernel, Program, Trust};
use crate::error::{Error, Result};

/// Which scan implementation the kernels use. (Not `Path`: that name collided with `std::path::Path`
/// in user code.)
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CodecPath {
    /// Subgroup operations (`Features::SUBGROUP`).
    Subgroup,
    /// Workgroup shared-memory scans only: runs everywhere (e.g. wgpu's GL backend).
    Portable,
}

impl CodecPath {
    /// `"subgroup"` or `"portable"`.
    pub fn name(self) -> &'static str {
        match self {
            CodecPath::Subgroup => "subgroup",
            CodecPath::Portable => "portable",
        }
    }
}

/// The smallest subgroup the subgroup path takes: the unordered compress assembles a mask word across as
/// many lanes as a tile has rounds (`lane_masks` in shaders/compress.wgsl), 8 for 32-bit elements.
/// Adapters report 8 (lavapipe on AVX2) to 128.
pub const MIN_SUBGROUP_LANES: u32 = 8;

/// Why `device` cannot take the subgroup path, or `None` where it can: `Features::SUBGROUP` and
/// subgroups of at least [`MIN_SUBGROUP_LANES`].
pub(crate) fn subgroup_path_unsupported(device: &wgpu::Device) -> Option<&'static str> {
    if !device.features().contains(wgpu::Features::SUBGROUP) {
        Some("the subgroup path needs Features::SUBGROUP")
    } else if device.adapter_info().subgroup_min_size < MIN_SUBGROUP_LANES {
        Some("the subgroup path needs subgroups of at least 8 lanes")
    } else {
        None
    }
}

/// Status words each look-back lane of `compress` reads per round (`LOOKBACK_PER_LANE` in
/// compress.wgsl, at most its `LOOKBACK_MAX`). The window (this × subgroup size) bounds the tile rate:
/// see docs/PERFORMANCE.md.
pub const LOOKBACK_PER_LANE: u32 = 1;

/// Whether the BF16 ReLU² forward, fused (`compress`) and plain (`forward`), squares in its NaN-flags
/// form on this adapter (`SQUARE_NAN_FLAGS` in shaders/lib/act.wgsl): on NVIDIA's H200 only. Both
/// forms give the same bits and the driver builds each to the same registers on the H100 and the H200,
/// yet the flags form took the H200's fused forward 5–6 % and its plain forward 4 % below the other
/// form, and the H100's fused forward 7–8 % above it (one call on each card, interleaved runs;
/// docs/PERFORMANCE.md, fortieth session). Other adapters keep the form measured faster on the H100,
/// the GH200 among them: its name contains "H200", but it is another card (the same Hopper GPU with
/// its own memory, beside a Grace CPU), and neither form has been timed on it.
pub(crate) fn square_nan_flags(info: &wgpu::AdapterInfo) -> bool {
    square_nan_flags_for(info.vendor, &info.name)
}

/// [`square_nan_flags`] of an adapter's PCI vendor id and name.
fn square_nan_flags_for(vendor: u32, name: &str) -> bool {
    vendor == 0x10de && name.contains("H200") && !name.contains("GH200")
}

/// The constants the knob may set, with the range each shader relies on (trusted modules: a value
/// outside it could index out of bounds or never terminate).
/// `compress_v2.POSITIONS_GAIN` (0..=64, an A/B of [`crate::format::v2::POSITIONS_GAIN`], which the host
/// sets otherwise): the version-2 writer takes a positions tile only where its words × (64 + N) / 64
/// are fewer than the mask tile's (other values than the canonical one make streams whose compact form
/// differs from the CPU encoder's; `shaders/compress_v2.wgsl`).
const TUNABLE: [(&str, &str, f64, f64); 5] = [
    ("compress", "SQUARE_NAN_FLAGS", 0.0, 1.0),
    ("forward", "SQUARE_NAN_FLAGS", 0.0, 1.0),
    ("compress", "SPIN_LIMIT", 1.0, 1e9),
    ("compress", "LOOKBACK_PER_LANE", 1.0, 8.0),
    ("compress_v2", "POSITIONS_GAIN", 0.0, 64.0),
];

/// One item of a kernel-constants spec (`kernel.NAME=value`).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantItem<'a> {
    /// The item as written (trimmed).
    pub text: &'a str,
    /// The entry point, e.g. `compress`.
    pub kernel: &'a str,
    /// The override constant's name.
    pub name: &'a str,
    /// Its value.
    pub value: f64,
}

/// Splits a kernel-constants spec (`kernel.NAME=value`, comma-separated, e.g.
/// `compress.LOOKBACK_PER_LANE=8,compress.SPIN_LIMIT=16`) into its items, checking only their syntax:
/// the syntax of `BITSPARSE_KERNEL_CONSTANTS` and of `pipeline_stats --constants`. A malformed item is
/// an error naming it.
pub fn parse_constants(spec: &str) -> std::result::Result<Vec<ConstantItem<'_>>, String> {
    let mut items = Vec::new();
    for text in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = |why: &str| format!("{why} in {text:?}");
        let (name, value) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (kernel, name) = name.trim().split_once('.').ok_or_else(|| bad("no kernel prefix"))?;
        let value: f64 = value.trim().parse().map_err(|_| bad("not a number"))?;
        items.push(ConstantItem { text, kernel: kernel.trim(), name: name.trim(), value });
    }
    Ok(items)
}

/// Applies the items of `spec` (see [`parse_constants`]) for `kernel`. Unknown kernels or names, and
/// values outside [`TUNABLE`]'s ranges, are errors, not silently ignored.
pub(crate) fn apply_tuning(spec: &str, kernel: &str, consts: &mut Vec<(&'static str, f64)>) -> Result<()> {
    let bad = |why: String| {
        // The list comes from TUNABLE itself, so a new knob cannot be left out of the message.
        let tunable: Vec<String> = TUNABLE.iter().map(|(k, n, lo, hi)| format!("{k}.{n} {lo}..={hi}")).collect();
        Error::InvalidArgument(format!("kernel constants: {why} (tunable: {})", tunable.join(", ")))
    };
    for item in parse_constants(spec).map_err(bad)? {
        let Some(&(_, tn, lo, hi)) = TUNABLE.iter().find(|(tk, tn, _, _)| *tk == item.kernel && *tn == item.name)
        else {
            return Err(bad(format!("not a tunable constant in {:?}", item.text)));
        };
        if !(lo..=hi).contains(&item.value) || item.value.fract() != 0.0 {
            return Err(bad(format!("value out of range in {:?}", item.text)));
        }
        if item.kernel == kernel {
            consts.retain(|(n, _)| *n != tn);
            consts.push((tn, item.value));
        }
    }
    Ok(())
}

/// The override constants of `kernel` ("compress", "decompress" or "compress_v2", the version-2
/// writer, which scans with lib/tile.wgsl too): the forward's square form (`square_flags`,
/// [`square_nan_flags`]; the fused forward's), the spin limit and look-back window of compress, the
/// version-2 writer's positions margin, `SCAN_SLOTS` (lib/tile.wgsl) on the subgroup path (one slot per
/// subgroup of the smallest size the
/// adapter reports, `subgroup_min`, so the workgroup array is no larger than needed: its default is 32
/// slots, 512 B, where the H200 needs 4), then the tuning spec. A pipeline takes those its variant
/// declares (`Program::kernel`).
fn override_constants(
    kernel: &str,
    path: CodecPath,
    subgroup_min: u32,
    spin_limit: u32,
    square_flags: bool,
    tuning: Option<&str>,
) -> Result<Vec<(&'static str, f64)>> {
    let mut c = Vec::new();
    if kernel == "compress" {
        c.push(("SQUARE_NAN_FLAGS", square_flags as u32 as f64));
        c.push(("SPIN_LIMIT", spin_limit as f64));
        c.push(("LOOKBACK_PER_LANE", LOOKBACK_PER_LANE as f64));
    }
    if kernel == "compress_v2" {
        c.push(("POSITIONS_GAIN", crate::format::v2::POSITIONS_GAIN as f64));
    }
    if path == CodecPath::Subgroup {
        c.push(("SCAN_SLOTS", (128 / subgroup_min.clamp(4, 128)) as f64));
    }
    if let Some(spec) = tuning {
        apply_tuning(spec, kernel, &mut c)?;
    }
    Ok(c)
}

/// How `compress` stages compacted values in workgroup memory before storing whole stream words.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Staging {
    /// [`Staging::Halves`] where the device has `Features::SHADER_I16`, except for the fused
    /// forward's FP8 storage (not measured with it); [`Staging::Words`] otherwise; unpacked 32-bit
    /// values stored directly ([`Staging::Direct`]).
    #[default]
    Auto,
    /// Packed `u32` words built with workgroup atomics: runs everywhere.
    Words,
    /// One value per `u16` slot (`STAGE16` in compress.wgsl) for every stream; needs `Features::SHADER_I16`.
    Halves,
    /// No staging where the stream allows it (`DIRECT` in compress.wgsl): each value stored straight
    /// into its place by the thread that owns it. Unpacked 16-bit values (through a `u16` view of the
    /// stream: `Features::SHADER_I16`) and unpacked 32-bit values; any other stream is staged as
    /// [`Staging::Auto`] stages it. ([`Staging::Auto`] stores only 32-bit values directly: 16-bit
    /// ones were 1.2–2 × slower that way on the H200, [`Kernels::direct`].)
    Direct,
}

impl Staging {
    /// Parses `auto`, `words`, `halves` or `direct`.
    pub fn parse(s: &str) -> Result<Staging> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Staging::Auto),
            "words" => Ok(Staging::Words),
            "halves" => Ok(Staging::Halves),
            "direct" => Ok(Staging::Direct),
            other => Err(Error::InvalidArgument(format!("staging `{other}`: expected auto, words, halves or direct"))),
        }
    }
}

/// Which way a codec kernel goes: `compress.wgsl` (`compress` + `finish`) or `decompress.wgsl`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Dense elements to a stream.
    Compress,
    /// A stream to dense elements.
    Decompress,
}

/// Width of the dense elements the kernel walks (`BITS32`, `BITS8`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// F32: 4 elements per vec4, 8 rounds per tile (`BITS32`).
    Bits32,
    /// BF16, F16.
    Bits16,
    /// FP8 e4m3 / e5m2.
    Bits8,
}

/// Where the stream lives (`ARENA`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Io {
    /// A caller's buffer range, at a position the host knows.
    Buffer,
    /// An arena slot, whose position is known only on the GPU.
    Arena,
}

/// The activation fused into the kernel (`FUSED_FWD` / `FUSED_BWD`): only on arena slots of BF16, F16
/// or F32 activations.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Fusion {
    /// A plain compress or decompress.
    None,
    /// The fused forward (a compress): z to a = act(relu(z)) and the compressed relu(z).
    Forward,
    /// The fused backward (a decompress): the compressed r and g = dL/da to dL/dz (and a).
    Backward,
}

/// What the stream stores (`FP8_STORE`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Storage {
    /// The dense elements themselves (lossless).
    Native,
    /// FP8 codes of a BF16 activation: the dense geometry stays 16-bit, the stream holds 8-bit (7
    /// sign-packed) codes. Needs a fused kernel.
    Fp8,
}

/// How a compress variant stages its compacted values (`STAGE16`): [`Staging`] resolved for a device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Packed `u32` words built with workgroup atomics.
    Words,
    /// One value per `u16` slot; needs `Features::SHADER_I16`.
    Halves,
    /// No staging: each value stored into the stream by its thread (`DIRECT`). Unpacked 16-bit (with
    /// `Features::SHADER_I16`) and 32-bit values only; the host picks it only for unpacked streams.
    Direct,
}

/// Whether the caller's input ranges may lie in the buffer of an output range (`SHARED_IO`). wgpu refuses
/// a buffer bound read-only and read-write in one dispatch, and a `var<storage, read>` needs a read-only
/// layout entry, so such inputs need a variant that declares them `read_write` (and only reads them). The
/// codec picks [`Sharing::Shared`] only when an input buffer is an output buffer, so the usual path keeps
/// its read-only inputs; shared variants are built on first use.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Sharing {
    /// Inputs in buffers of their own (bound read-only).
    #[default]
    Separate,
    /// An input in an output's buffer (inputs bound `read_write`).
    Shared,
}

/// How a compress's tiles claim their place in the values section (`UNORDERED`; FORMAT.md §7).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum TileOrder {
    /// Tiles in tensor order, found by a chained scan over per-tile status words (a start-order
    /// ticket, look-back with decoupled fallback): the bytes are deterministic and equal
    /// `cpu::compress`'s. What files store.
    #[default]
    Ordered,
    /// Each tile claims its value words with one atomic add on a counter, in whatever order tiles get
    /// there; the table records each tile's start. No chain, no ticket, no spinning: on the H200 the
    /// look-back's latency was most of the ordered compress's time (`docs/PERFORMANCE.md`). Bytes are
    /// not deterministic; decoded tensors are bit-exact, and `cpu::compact` turns the stream into the
    /// ordered one. The arena's default.
    Unordered,
}

impl TileOrder {
    /// The bench JSON's `tile_order` value: `"ordered"` or `"unordered"`.
    pub fn name(self) -> &'static str {
        match self {
            TileOrder::Ordered => "ordered",
            TileOrder::Unordered => "unordered",
        }
    }

    /// Parses `ordered` or `unordered`.
    pub fn parse(s: &str) -> Result<TileOrder> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ordered" => Ok(TileOrder::Ordered),
            "unordered" => Ok(TileOrder::Unordered),
            other => Err(Error::InvalidArgument(format!("tile order `{other}`: expected ordered or unordered"))),
        }
    }
}

/// A combination [`Variant::new`] refuses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    /// A fused kernel on a caller's buffer: fused kernels work on arena slots.
    #[error("fused kernels work on arena slots")]
    FusionNeedsArena,
    /// A fused forward that decompresses, or a fused backward that compresses.
    #[error("the fused forward is a compress and the fused backward a decompress")]
    FusionDirection,
    /// A fused kernel on 8-bit elements, or FP8 storage of other than 16-bit (BF16) activations.
    #[error("fused kernels take BF16, F16 or F32 activations (FP8 storage: BF16 only)")]
    FusionNeedsBits16,
    /// F16 math on a kernel that is not a fused one of 16-bit elements with native storage.
    #[error("F16 math is a choice of the fused kernels on 16-bit elements without FP8 storage")]
    F16MathNeedsFusedBits16,
    /// FP8 storage without a fused kernel.
    #[error("FP8 storage needs a fused kernel")]
    Fp8NeedsFusion,
    /// `u16` staging of a decompress.
    #[error("u16 staging is a choice of compress")]
    StagingNeedsCompress,
    /// `u16` staging of 32-bit elements, whose values do not fit a `u16` slot.
    #[error("u16 staging cannot hold 32-bit values")]
    StagingNeedsNarrow,
    /// Direct stores of 8-bit values (no 8-bit stores in WGSL) or of FP8 codes.
    #[error("direct stores take 16- or 32-bit values stored natively")]
    DirectNeedsWideValues,
    /// Shared inputs on a kernel whose only caller range is one input or one output (an unfused arena
    /// push or decompress: the arena is never a caller's buffer).
    #[error("shared input and output buffers need a kernel with a caller input and a caller output")]
    SharingNeedsCallerIo,
    /// A tile order for a decompress (decoders follow the table whatever the order).
    #[error("the tile order is a choice of compress")]
    OrderNeedsCompress,
}

/// What a call fixes that its kernel would otherwise read from its params at run time: sign packing,
/// the fused activation and (compress) whether every tile of the dispatch is whole. A pipeline built
/// for fixed modes gets them as override constants (`SIGN_MODE`, `ACT_MODE`, `ALL_FULL`) and the driver
/// drops the other modes' code: on an H100 the BF16 fused forward 7–12 % faster, the compress 3–4 %, the
/// decompress 5–6 % (compress.wgsl and decompress.wgsl give the figures). Only the whole set was
/// faster: the fused forward with its activation read at run time was slower than with nothing fixed.
/// `None` / `false`: read at run time (the pipeline serves every mode). The decompress takes no
/// `all_full` (it was slower with it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Modes {
    /// Sign packing of the stream.
    pub sign_pack: Option<bool>,
    /// The fused kernel's activation ([`crate::activation::Activation::code`]); fused variants only.
    pub act: Option<u32>,
    /// Every tile of the dispatch is whole (a compress's chunk without a partial tile).
    pub all_full: bool,
}

impl Modes {
    /// The modes the warm-ups build for: unpacked values, whole tiles, activation code `act`.
    pub(crate) fn unpacked(act: Option<u32>) -> Modes {
        Modes { sign_pack: Some(false), act, all_full: true }
    }

    /// The override constants of these modes.
    pub(crate) fn constants(&self) -> Vec<(&'static str, f64)> {
        let mut c = Vec::new();
        if let Some(s) = self.sign_pack {
            c.push(("SIGN_MODE", s as u32 as f64));
        }
        if let Some(a) = self.act {
            c.push(("ACT_MODE", a as f64));
        }
        if self.all_full {
            c.push(("ALL_FULL", 1.0));
        }
        c
    }
}

/// Which codec kernel: a valid combination of the choices above (see [`Variant::new`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    op: Op,
    elem: Elem,
    io: Io,
    fusion: Fusion,
    storage: Storage,
    stage: Stage,
    /// The fused math is F16's (`ACT_F16`) rather than BF16's (16-bit elements only).
    f16_math: bool,
    /// Whether inputs may share an output's buffer (`SHARED_IO`).
    sharing: Sharing,
    /// How a compress's tiles claim their place (`UNORDERED`).
    order: TileOrder,
    /// What the pipeline is built for beyond its defines (override constants).
    modes: Modes,
}

impl Variant {
    /// The variant for these choices, staged with packed words; a combination the shaders do not have is
    /// an error.
    pub fn new(
        op: Op,
        elem: Elem,
        io: Io,
        fusion: Fusion,
        storage: Storage,
    ) -> std::result::Result<Variant, VariantError> {
        match (op, fusion) {
            (_, Fusion::None) => {}
            _ if io != Io::Arena => return Err(VariantError::FusionNeedsArena),
            _ if elem == Elem::Bits8 => return Err(VariantError::FusionNeedsBits16),
            _ if elem == Elem::Bits32 && storage == Storage::Fp8 => return Err(VariantError::FusionNeedsBits16),
            (Op::Compress, Fusion::Forward) | (Op::Decompress, Fusion::Backward) => {}
            _ => return Err(VariantError::FusionDirection),
        }
        if storage == Storage::Fp8 && fusion == Fusion::None {
            return Err(VariantError::Fp8NeedsFusion);
        }
        Ok(Variant {
            op,
            elem,
            io,
            fusion,
            storage,
            stage: Stage::Words,
            f16_math: false,
            sharing: Sharing::Separate,
            order: TileOrder::Ordered,
            modes: Modes::default(),
        })
    }

    /// The same fused variant with F16 math (`ACT_F16`) instead of BF16's: 16-bit elements, native
    /// storage.
    pub fn with_f16_math(self) -> std::result::Result<Variant, VariantError> {
        if self.fusion == Fusion::None || self.elem != Elem::Bits16 || self.storage != Storage::Native {
            return Err(VariantError::F16MathNeedsFusedBits16);
        }
        Ok(Variant { f16_math: true, ..self })
    }

    /// Whether the fused math is F16's.
    pub fn f16_math(&self) -> bool {
        self.f16_math
    }

    /// The same variant staged with `stage`; [`Stage::Halves`] and [`Stage::Direct`] are compress
    /// choices, and direct stores take 16- or 32-bit values stored natively.
    pub fn with_stage(self, stage: Stage) -> std::result::Result<Variant, VariantError> {
        if stage != Stage::Words && self.op != Op::Compress {
            return Err(VariantError::StagingNeedsCompress);
        }
        if stage == Stage::Direct && (self.elem == Elem::Bits8 || self.storage != Storage::Native) {
            return Err(VariantError::DirectNeedsWideValues);
        }
        if stage == Stage::Halves && self.elem == Elem::Bits32 {
            return Err(VariantError::StagingNeedsNarrow);
        }
        Ok(Variant { stage, ..self })
    }

    /// The same variant with `sharing`; [`Sharing::Shared`] needs a caller input and a caller output
    /// (a plain compress or decompress, or a fused kernel).
    pub fn with_sharing(self, sharing: Sharing) -> std::result::Result<Variant, VariantError> {
        if sharing == Sharing::Shared && self.io == Io::Arena && self.fusion == Fusion::None {
            return Err(VariantError::SharingNeedsCallerIo);
        }
        Ok(Variant { sharing, ..self })
    }

    /// The same variant with tiles placed in `order`; [`TileOrder::Unordered`] is a compress choice.
    pub fn with_order(self, order: TileOrder) -> std::result::Result<Variant, VariantError> {
        if order == TileOrder::Unordered && self.op != Op::Compress {
            return Err(VariantError::OrderNeedsCompress);
        }
        Ok(Variant { order, ..self })
    }

    /// The same variant built for `modes`: an activation only on a fused variant, `all_full` only on a
    /// compress (elsewhere they are dropped: the kernel has no such mode).
    pub fn with_modes(self, modes: Modes) -> Variant {
        let modes = Modes {
            sign_pack: modes.sign_pack,
            act: modes.act.filter(|_| self.fusion != Fusion::None),
            all_full: modes.all_full && self.op == Op::Compress,
        };
        Variant { modes, ..self }
    }

    /// What the variant is built for beyond its defines.
    pub fn modes(&self) -> Modes {
        self.modes
    }

    /// How a compress's tiles claim their place ([`TileOrder::Ordered`] for a decompress).
    pub fn order(&self) -> TileOrder {
        self.order
    }

    /// Whether inputs may share an output's buffer.
    pub fn sharing(&self) -> Sharing {
        self.sharing
    }

    /// Compress or decompress.
    pub fn op(&self) -> Op {
        self.op
    }
    /// Element width.
    pub fn elem(&self) -> Elem {
        self.elem
    }
    /// Buffer or arena.
    pub fn io(&self) -> Io {
        self.io
    }
    /// The fused activation, if any.
    pub fn fusion(&self) -> Fusion {
        self.fusion
    }
    /// Native or FP8 storage.
    pub fn storage(&self) -> Storage {
        self.storage
    }
    /// The staging of a compress ([`Stage::Words`] for a decompress).
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// The shader file and main entry point: `compress.wgsl`/`compress` or `decompress.wgsl`/`decompress`.
    pub fn shader(&self) -> (&'static str, &'static str) {
        match self.op {
            Op::Compress => ("compress.wgsl", "compress"),
            Op::Decompress => ("decompress.wgsl", "decompress"),
        }
    }

    /// The preprocessor defines (see [`crate::shaders`]) this variant is built with on `path`.
    pub fn defines(&self, path: CodecPath) -> Vec<&'static str> {
        [
            (self.elem == Elem::Bits32, "BITS32"),
            (self.elem == Elem::Bits8, "BITS8"),
            (path == CodecPath::Subgroup, "SUBGROUP"),
            (self.io == Io::Arena, "ARENA"),
            (self.fusion == Fusion::Forward, "FUSED_FWD"),
            (self.fusion == Fusion::Backward, "FUSED_BWD"),
            (self.storage == Storage::Fp8, "FP8_STORE"),
            (self.stage == Stage::Halves, "STAGE16"),
            (self.stage == Stage::Direct, "DIRECT"),
            (self.f16_math, "ACT_F16"),
            (self.sharing == Sharing::Shared, "SHARED_IO"),
            (self.order == TileOrder::Unordered, "UNORDERED"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// A built variant: its program (module and bind-group layout) and kernels.
#[derive(Debug)]
pub struct Built {
    /// The shader variant.
    pub program: Program,
    /// `compress` or `decompress`.
    pub main: Kernel,
    /// `finish` (compress variants only): shares `main`'s layout, so it takes the last chunk's bind group.
    pub finish: Option<Kernel>,
}

/// All codec pipelines of a device, built on first use of each variant and kept.
#[derive(Debug)]
pub struct Kernels {
    /// The path they are built for.
    pub path: CodecPath,
    device: wgpu::Device,
    spin_limit: u32,
    /// The tuning spec, `CodecConfig::kernel_constants`.
    tuning: Option<String>,
    staging: Staging,
    /// `Features::SHADER_I16`: `u16` slots and `u16` stores.
    i16: bool,
    trust: Trust,
    cache: Mutex<HashMap<Variant, Arc<Built>>>,
}

impl Kernels {
    /// Builds the plain codec variants now (so errors surface at construction).
    /// The library reads no environment: staging, tuning constants and checked shaders come from
    /// `config` (the CLI and the bench read their `BITSPARSE_*` knobs and pass them in).
    pub fn new(device: &wgpu::Device, path: CodecPath, config: &crate::CodecConfig) -> Result<Kernels> {
        if let (CodecPath::Subgroup, Some(why)) = (path, subgroup_path_unsupported(device)) {
            return Err(Error::Unsupported(why.into()));
        }
        let staging = config.staging.unwrap_or(Staging::Auto);
        let i16 = device.features().contains(wgpu::Features::SHADER_I16);
        if staging == Staging::Halves && !i16 {
            return Err(Error::Unsupported("u16 staging needs Features::SHADER_I16".into()));
        }
        let k = Kernels {
            path,
            device: device.clone(),
            spin_limit: config.spin_limit.unwrap_or(64),
            tuning: config.kernel_constants.clone(),
            staging,
            i16,
            trust: if config.checked_shaders { Trust::Checked } else { Trust::Trusted },
            cache: Mutex::new(HashMap::new()),
        };
        for op in [Op::Compress, Op::Decompress] {
            for elem in [Elem::Bits16, Elem::Bits8, Elem::Bits32] {
                let v = k.variant(op, elem, Io::Buffer, Fusion::None, Storage::Native, false)?;
                // What an unpacked stream of whole tiles uses (its direct-store variant where it has one).
                k.get(k.direct(v, false).with_modes(Modes::unpacked(None)))?;
            }
        }
        Ok(k)
    }

    /// The variant for these choices, with the staging this device and configuration use; `f16_math`:
    /// F16 fused math ([`Variant::with_f16_math`]). A combination the shaders do not have is
    /// `Error::InvalidArgument`.
    pub fn variant(
        &self,
        op: Op,
        elem: Elem,
        io: Io,
        fusion: Fusion,
        storage: Storage,
        f16_math: bool,
    ) -> Result<Variant> {
        let invalid = |e: VariantError| Error::InvalidArgument(format!("codec kernel: {e}"));
        let mut v = Variant::new(op, elem, io, fusion, storage).map_err(invalid)?;
        if f16_math {
            v = v.with_f16_math().map_err(invalid)?;
        }
        // Measured on the H200 (docs/PERFORMANCE.md): halves are faster for BF16 at every density
        // and for e4m3 at ρ <= 0.176 (1.5 % slower at ρ = 0.5). 32-bit values do not fit a `u16` slot:
        // F32 is always staged in words, whatever the staging asked for.
        let halves = match self.staging {
            _ if elem == Elem::Bits32 || !self.i16 => false,
            Staging::Halves => true,
            Staging::Words => false,
            Staging::Auto | Staging::Direct => storage != Storage::Fp8,
        };
        match op {
            Op::Compress if halves => v.with_stage(Stage::Halves).map_err(invalid),
            _ => Ok(v),
        }
    }

    /// `v` (a compress from [`Kernels::variant`]) with direct stores where this device and configuration
    /// use them and the stream allows them (unpacked values, `sign_pack` false, stored natively):
    /// [`Staging::Auto`] for 32-bit values, [`Staging::Direct`] for 32-bit values and for 16-bit values
    /// on a device with `Features::SHADER_I16`. Anything else is `v` itself.
    ///
    /// Why only 32-bit values by default (H200, 201M elements, unordered, the same binary in one call,
    /// `benches/results/ab-thirteenth/`): F32 compress 0.568 -> 0.423 ms at ρ = 0.176 and the F32
    /// fused forward 17 % faster (its staging was packed words built with workgroup atomics), but BF16
    /// compress 0.272 / 0.220 / 0.212 -> 0.549 / 0.270 / 0.233 ms at ρ = 0.5 / 0.176 / 0.05, although the
    /// kernel drops from 40 registers and 2.6 KB of workgroup memory to 31 and 0.6 KB: scattered `u16`
    /// stores write each 32-byte sector in many pieces, where the `u16` slots store whole words coalesced.
    pub fn direct(&self, v: Variant, sign_pack: bool) -> Variant {
        let wide = match (v.elem(), self.staging) {
            (Elem::Bits32, Staging::Auto | Staging::Direct) => true,
            (Elem::Bits16, Staging::Direct) => self.i16,
            _ => false,
        };
        if sign_pack || !wide || v.op() != Op::Compress || v.storage() != Storage::Native {
            return v;
        }
        v.with_stage(Stage::Direct).unwrap_or(v)
    }

    /// Whether elements of `elem` are staged in `u16` slots (the version-2 writer asks: it has no FP8
    /// storage, so only the staging and the width decide).
    pub(crate) fn stages_halves(&self, elem: Elem) -> bool {
        elem != Elem::Bits32 && self.i16 && self.staging != Staging::Words
    }

    /// The pipelines of `v`, built on first request.
    pub fn get(&self, v: Variant) -> Result<Arc<Built>> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = cache.get(&v) {
            return Ok(b.clone());
        }
        let b = Arc::new(self.build(v)?);
        cache.insert(v, b.clone());
        Ok(b)
    }

    /// The override constants of `kernel` ([`override_constants`] with this device's smallest subgroup
    /// size, square form, spin limit and tuning spec).
    pub(crate) fn constants(&self, kernel: &str) -> Result<Vec<(&'static str, f64)>> {
        let info = self.device.adapter_info();
        let square = square_nan_flags(&info);
        override_constants(kernel, self.path, info.subgroup_min_size, self.spin_limit, square, self.tuning.as_deref())
    }

    /// Builds `v`: one program (the layout comes from its reflected interface), its main kernel and, for a
    /// compress, `finish` (no override constants).
    fn build(&self, v: Variant) -> Result<Built> {
        let device = &self.device;
        let (file, entry) = v.shader();
        // `Program::kernel` passes only the constants the variant declares. The modes come after the
        // tuning spec, which cannot name them (they are no knobs: a wrong one is a wrong answer).
        let mut consts = self.constants(entry)?;
        consts.extend(v.modes.constants());
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let program = Program::new(device, file, &v.defines(self.path), self.trust);
        let main = program.kernel(device, entry, &consts);
        let finish = (v.op == Op::Compress).then(|| program.kernel(device, "finish", &[]));
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Wgpu(format!("building codec pipeline {v:?} failed: {e}")));
        }
        Ok(Built { program, main, finish })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_refuse_what_the_shaders_lack() {
        use {Elem::*, Fusion::*, Io::*, Op::*, Storage::*};
        assert_eq!(Variant::new(Compress, Bits16, Buffer, Forward, Native), Err(VariantError::FusionNeedsArena));
        assert_eq!(Variant::new(Compress, Bits8, Arena, Forward, Native), Err(VariantError::FusionNeedsBits16));
        assert_eq!(Variant::new(Decompress, Bits16, Arena, Forward, Native), Err(VariantError::FusionDirection));
        assert_eq!(Variant::new(Compress, Bits16, Arena, Backward, Native), Err(VariantError::FusionDirection));
        assert_eq!(Variant::new(Compress, Bits16, Arena, Fusion::None, Fp8), Err(VariantError::Fp8NeedsFusion));
        let d = Variant::new(Decompress, Bits8, Buffer, Fusion::None, Native).unwrap();
        assert_eq!(d.with_stage(Stage::Halves), Err(VariantError::StagingNeedsCompress));
        assert_eq!(d.with_stage(Stage::Words), Ok(d));
        let f = Variant::new(Compress, Bits32, Arena, Forward, Native).unwrap();
        assert_eq!(f.defines(CodecPath::Portable), ["BITS32", "ARENA", "FUSED_FWD"]);
        assert_eq!(f.with_f16_math(), Err(VariantError::F16MathNeedsFusedBits16));
        assert_eq!(Variant::new(Decompress, Bits32, Arena, Backward, Fp8), Err(VariantError::FusionNeedsBits16));
        let h = Variant::new(Decompress, Bits16, Arena, Backward, Native).unwrap().with_f16_math().unwrap();
        assert_eq!(h.defines(CodecPath::Portable), ["ARENA", "FUSED_BWD", "ACT_F16"]);
        let p = Variant::new(Compress, Bits16, Arena, Forward, Fp8).unwrap();
        assert_eq!(p.with_f16_math(), Err(VariantError::F16MathNeedsFusedBits16));
        let n = Variant::new(Compress, Bits16, Arena, Fusion::None, Native).unwrap();
        assert_eq!(n.with_f16_math(), Err(VariantError::F16MathNeedsFusedBits16));
        let c = Variant::new(Compress, Bits32, Buffer, Fusion::None, Native).unwrap();
        assert_eq!(c.with_stage(Stage::Halves), Err(VariantError::StagingNeedsNarrow));
        assert_eq!(c.defines(CodecPath::Subgroup), ["BITS32", "SUBGROUP"]);
    }

    #[test]
    fn variant_defines() {
        use {Elem::*, Fusion::*, Io::*, Op::*, Storage::*};
        let v = Variant::new(Compress, Bits16, Arena, Forward, Fp8).unwrap().with_stage(Stage::Halves).unwrap();
        assert_eq!(v.defines(CodecPath::Subgroup), ["SUBGROUP", "ARENA", "FUSED_FWD", "FP8_STORE", "STAGE16"]);
        assert_eq!(v.shader(), ("compress.wgsl", "compress"));
        let v = Variant::new(Decompress, Bits8, Buffer, Fusion::None, Native).unwrap();
        assert_eq!(v.defines(CodecPath::Portable), ["BITS8"]);
        let v = Variant::new(Decompress, Bits16, Arena, Backward, Native).unwrap();
        assert_eq!(v.defines(CodecPath::Portable), ["ARENA", "FUSED_BWD"]);
        assert_eq!(v.shader(), ("decompress.wgsl", "decompress"));
    }

    #[test]
    fn direct_stores_take_wide_native_values_of_compress() {
        use {Elem::*, Fusion::*, Io::*, Op::*, Storage::*};
        let c =
            Variant::new(Compress, Bits16, Arena, Forward, Native).unwrap().with_order(TileOrder::Unordered).unwrap();
        let d = c.with_stage(Stage::Direct).unwrap();
        assert_eq!(d.defines(CodecPath::Subgroup), ["SUBGROUP", "ARENA", "FUSED_FWD", "DIRECT", "UNORDERED"]);
        assert_eq!(d.stage(), Stage::Direct);
        let f = Variant::new(Compress, Bits32, Buffer, Fusion::None, Native).unwrap();
        assert_eq!(f.with_stage(Stage::Direct).unwrap().defines(CodecPath::Portable), ["BITS32", "DIRECT"]);
        let e = Variant::new(Compress, Bits8, Buffer, Fusion::None, Native).unwrap();
        assert_eq!(e.with_stage(Stage::Direct), Err(VariantError::DirectNeedsWideValues));
        let q = Variant::new(Compress, Bits16, Arena, Forward, Fp8).unwrap();
        assert_eq!(q.with_stage(Stage::Direct), Err(VariantError::DirectNeedsWideValues));
        let x = Variant::new(Decompress, Bits32, Buffer, Fusion::None, Native).unwrap();
        assert_eq!(x.with_stage(Stage::Direct), Err(VariantError::StagingNeedsCompress));
    }

    #[test]
    fn staging_direct_parses() {
        assert_eq!(Staging::parse(" Direct ").unwrap(), Staging::Direct);
    }

    #[test]
    fn shared_io_variants() {
        use {Elem::*, Fusion::*, Io::*, Op::*, Storage::*};
        let plain = Variant::new(Compress, Bits16, Buffer, Fusion::None, Native).unwrap();
        assert_eq!(plain.sharing(), Sharing::Separate);
        let s = plain.with_stage(Stage::Halves).unwrap().with_sharing(Sharing::Shared).unwrap();
        assert_eq!(s.defines(CodecPath::Subgroup), ["SUBGROUP", "STAGE16", "SHARED_IO"]);
        assert_ne!(s, plain.with_stage(Stage::Halves).unwrap(), "a shared variant is cached apart");
        let f = Variant::new(Decompress, Bits16, Arena, Backward, Fp8).unwrap().with_sharing(Sharing::Shared).unwrap();
        assert_eq!(f.defines(CodecPath::Portable), ["ARENA", "FUSED_BWD", "FP8_STORE", "SHARED_IO"]);
        for op in [Compress, Decompress] {
            let v = Variant::new(op, Bits8, Arena, Fusion::None, Native).unwrap();
            assert_eq!(v.with_sharing(Sharing::Shared), Err(VariantError::SharingNeedsCallerIo));
            assert_eq!(v.with_sharing(Sharing::Separate), Ok(v));
        }
    }

    #[test]
    fn tuning_spec_applies_to_its_kernel_only() {
        let mut c = vec![("SPIN_LIMIT", 64.0), ("LOOKBACK_PER_LANE", 1.0)];
        apply_tuning(" compress.LOOKBACK_PER_LANE = 4 ,compress.SPIN_LIMIT=16", "compress", &mut c).unwrap();
        c.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(c, vec![("LOOKBACK_PER_LANE", 4.0), ("SPIN_LIMIT", 16.0)]);
        let mut d = Vec::new();
        apply_tuning("compress.LOOKBACK_PER_LANE=4", "decompress", &mut d).unwrap();
        assert!(d.is_empty());
        apply_tuning("", "compress", &mut d).unwrap();
        assert!(d.is_empty());
    }

    #[test]
    fn constant_specs_parse_any_name_and_name_the_bad_item() {
        let items = parse_constants(" compress.SCAN_SLOTS = 4 ,,decompress.X=2.5").unwrap();
        assert_eq!(
            items,
            vec![
                ConstantItem { text: "compress.SCAN_SLOTS = 4", kernel: "compress", name: "SCAN_SLOTS", value: 4.0 },
                ConstantItem { text: "decompress.X=2.5", kernel: "decompress", name: "X", value: 2.5 },
            ]
        );
        assert_eq!(parse_constants("compress.A=1,compress.B").unwrap_err(), "no '=' in \"compress.B\"");
        assert!(parse_constants("").unwrap().is_empty());
    }

    #[test]
    fn staging_names() {
        assert_eq!(Staging::parse("auto").unwrap(), Staging::Auto);
        assert_eq!(Staging::parse(" Words ").unwrap(), Staging::Words);
        assert_eq!(Staging::parse("halves").unwrap(), Staging::Halves);
        assert!(matches!(Staging::parse("u16"), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn tuning_spec_rejects_what_the_shaders_cannot_take() {
        for bad in [
            "compress.LOOKBACK_PER_LANE=9",
            "compress.LOOKBACK_PER_LANE=0",
            "compress.LOOKBACK_PER_LANE=2.5",
            "compress.SPIN_LIMIT=0",
            "compress.SCAN_SLOTS=4",
            "compress.COMPACT=1",
            "decompress.SPIN_LIMIT=4",
            "compres.SPIN_LIMIT=4",
            "SPIN_LIMIT=4",
            "compress.SPIN_LIMIT",
            "compress.SPIN_LIMIT=x",
        ] {
            let mut c = Vec::new();
            assert!(
                matches!(apply_tuning(bad, "compress", &mut c), Err(Error::InvalidArgument(_))),
                "{bad:?} was accepted"
            );
            assert!(c.is_empty(), "{bad:?} changed the constants");
        }
        // The error names every tunable constant with its range.
        let Err(Error::InvalidArgument(msg)) = apply_tuning("compress.COMPACT=1", "compress", &mut Vec::new()) else {
            panic!("accepted")
        };
        for (k, n, lo, hi) in TUNABLE {
            assert!(msg.contains(&format!("{k}.{n} {lo}..={hi}")), "{msg} lacks {k}.{n}");
        }
    }

    /// The square's form follows the adapter: the flags form on NVIDIA's H200s only.
    #[test]
    fn square_form_by_adapter() {
        assert!(square_nan_flags_for(0x10de, "NVIDIA H200"));
        assert!(square_nan_flags_for(0x10de, "NVIDIA H200 NVL"));
        for (vendor, name) in [
            (0x10de, "NVIDIA H100 80GB HBM3"),
            (0x10de, "NVIDIA GH200 480GB"),
            (0x10005, "llvmpipe (LLVM 15.0.6, 256 bits)"),
            (0x1002, "H200"),
        ] {
            assert!(!square_nan_flags_for(vendor, name), "{name}");
        }
    }

    /// `Program::kernel` passes a pipeline only the constants its variant declares, so a constant no
    /// variant declares (a renamed override) would be dropped everywhere without a word: every constant
    /// the library sets on either path, and every tunable knob, must be declared by some variant of its
    /// kernel's file.
    #[test]
    fn every_constant_set_is_declared_by_a_variant() {
        use crate::shaders::{INTERFACES, VARIANTS};
        let spec: Vec<String> = TUNABLE.iter().map(|(k, n, lo, _)| format!("{k}.{n}={lo}")).collect();
        for (kernel, file) in
            [("compress", "compress.wgsl"), ("decompress", "decompress.wgsl"), ("compress_v2", "compress_v2.wgsl")]
        {
            for path in [CodecPath::Subgroup, CodecPath::Portable] {
                for (name, _) in override_constants(kernel, path, 32, 64, false, Some(&spec.join(","))).unwrap() {
                    let declared = VARIANTS
                        .iter()
                        .filter(|v| v.file == file)
                        .any(|v| v.by_mask.iter().any(|&i| INTERFACES[i as usize].declares_override(name)));
                    assert!(declared, "{kernel}.{name} is set on {path:?} but no variant of {file} declares it");
                }
            }
        }
        // Every knob reaches its kernel's constants.
        for (k, n, _, _) in TUNABLE {
            let c = override_constants(k, CodecPath::Portable, 32, 64, false, Some(&spec.join(","))).unwrap();
            assert!(c.iter().any(|(name, _)| *name == n), "{k}.{n} not among {c:?}");
        }
        // The modes' constants too (a renamed override would leave every pipeline reading its mode at
        // run time), on every variant of each kernel; a decompress has no `all_full`.
        let all = Modes { sign_pack: Some(true), act: Some(1), all_full: true };
        for (v, file, names) in [
            (
                Variant::new(Op::Compress, Elem::Bits16, Io::Arena, Fusion::Forward, Storage::Native).unwrap(),
                "compress.wgsl",
                &["SIGN_MODE", "ACT_MODE", "ALL_FULL"][..],
            ),
            (
                Variant::new(Op::Decompress, Elem::Bits16, Io::Arena, Fusion::Backward, Storage::Native).unwrap(),
                "decompress.wgsl",
                &["SIGN_MODE", "ACT_MODE"][..],
            ),
        ] {
            let names_set: Vec<_> = v.with_modes(all).modes().constants().into_iter().map(|(n, _)| n).collect();
            assert_eq!(names_set, names);
            for variant in VARIANTS.iter().filter(|x| x.file == file) {
                for &i in variant.by_mask {
                    for n in names {
                        assert!(INTERFACES[i as usize].declares_override(n), "a variant of {file} lacks {n}");
                    }
                }
            }
        }
        assert!(Modes::default().constants().is_empty(), "default modes are read at run time");
        // An unfused kernel has no activation to fix (a pipeline per activation would be a waste).
        let plain = Variant::new(Op::Compress, Elem::Bits16, Io::Buffer, Fusion::None, Storage::Native).unwrap();
        assert_eq!(plain.with_modes(all).modes().act, None);
        // The plain forward takes the square's form too (DenseAct sets it on each dtype's forward).
        for defines in [&[][..], &["ACT_F16"], &["BITS32"]] {
            let plain = crate::shaders::interface("plain_act.wgsl", defines).unwrap();
            assert!(plain.declares_override("SQUARE_NAN_FLAGS"), "plain_act.wgsl {defines:?} lacks it");
        }
        // And the table follows the defines: SCAN_SLOTS only where the subgroup scan is compiled in.
        let sub = crate::shaders::interface("decompress.wgsl", &["SUBGROUP"]).unwrap();
        let portable = crate::shaders::interface("decompress.wgsl", &[]).unwrap();
        assert!(sub.declares_override("SCAN_SLOTS") && !portable.declares_override("SCAN_SLOTS"));
    }
}
