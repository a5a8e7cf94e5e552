// The sign mode of a pipeline (kernels.rs `Modes`): SIGN_MODE = AT_RUN_TIME reads sign packing from the
// includer's uniform `p` (`sign_pack`); 0 or 1 fixes it for a pipeline the host builds for calls of that
// mode, so the driver folds the other mode's code away. Included by the four codec kernels; the
// figures are in compress.wgsl and decompress.wgsl.
const AT_RUN_TIME: u32 = 0xffffffffu;
override SIGN_MODE: u32 = AT_RUN_TIME;
fn sign_pack_of() -> u32 { return select(SIGN_MODE, p.sign_pack, SIGN_MODE == AT_RUN_TIME); }
