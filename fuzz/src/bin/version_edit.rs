//! Fuzz target `version_edit`: see `zkv_fuzz::targets::version_edit`.
fn main() {
    zkv_fuzz::run("version_edit", zkv_fuzz::targets::version_edit);
}
