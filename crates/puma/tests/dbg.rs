mod common;
use common::*;
#[test]
#[ignore]
fn dump() {
    let g = small_cnn(4);
    let p = pimkit_puma::compile(&g, &pimkit_puma::Arch::default(), &pimkit_puma::CompileOptions { loops: false, ..Default::default() }).unwrap();
    p.save(std::path::Path::new("/tmp/pdump2")).unwrap();
}
