//! Rebuilds the binary when a web page or template is added, edited or removed: they are embedded
//! (see `src/assets.rs`), and a directory named here makes cargo rerun on any change inside it.

fn main() {
    println!("cargo::rerun-if-changed=../../web");
    println!("cargo::rerun-if-changed=../../examples");
}
