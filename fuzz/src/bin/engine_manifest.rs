//! Fuzz target `engine_manifest`: see `zkv_fuzz::targets::engine_manifest`.
fn main() {
    zkv_fuzz::run("engine_manifest", zkv_fuzz::targets::engine_manifest);
}
