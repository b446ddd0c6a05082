fn main() {
    println!("sdlc-runner");
}
