//! `import:` in an experiment or a defense file.
pub fn placeholder() {}
