//! The fault-file parser returns `Ok` or a located `Err` for any input and
//! never panics: arbitrary bytes, arbitrary text, and structure-aware random
//! YAML built from the real key names and value shapes, in block and flow
//! style. Bounded so the whole file runs in a few seconds in debug builds.

use firedrill::fault::FaultFile;
use firedrill::fault::spec::kind_keys;
use firedrill::schema::{SchemaError, Segment, from_yaml_str, locate};
use proptest::prelude::*;
use proptest::sample::select;

/// Parses `text`; on error checks that the error is located and says
/// something. A panic inside fails the proptest case.
fn parse(text: &str) -> Result<FaultFile, SchemaError> {
    let result = from_yaml_str::<FaultFile>("p.yaml", text);
    if let Err(e) = &result {
        assert!(e.line >= 1, "error without a line: {e} for {text:?}");
        assert!(e.column >= 1, "error without a column: {e} for {text:?}");
        assert!(!e.message.trim().is_empty(), "empty message for {text:?}");
        assert!(!e.to_string().contains('\n'), "multi-line message: {e}");
    }
    result
}

const TOP_KEYS: &[&str] = &["faults", "fault", "seed"];

/// The keys of a fault entry (its kinds from the crate, so a new kind is
/// fuzzed too), plus a misspelling.
fn fault_keys() -> Vec<&'static str> {
    let mut keys = vec![
        "name",
        "probability",
        "match",
        "at",
        "for",
        "pattern",
        "after_idle",
        "latnecy",
    ];
    keys.extend(kind_keys());
    keys
}

const PARAM_KEYS: &[&str] = &[
    "status",
    "message",
    "delay",
    "jitter",
    "per",
    "direction",
    "code",
    "body",
    "headers",
    "after_bytes",
    "after",
    "rate",
    "average_size",
    "size_variation",
    "bytes",
    "method",
    "path",
    "regex",
    "up",
    "down",
    "x-tenant",
    "user-agent",
];

const VALUES: &[&str] = &[
    "150ms",
    "3s",
    "1m30s",
    "0",
    "0s",
    "-5s",
    "250",
    "3 parsecs",
    "1e400s",
    "30%",
    "100%",
    "140%",
    "-1%",
    "50",
    "503",
    "200",
    "99",
    "599",
    "100KB/s",
    "0KB/s",
    "-5KB/s",
    "1MiB",
    "64",
    "/api/*",
    "api/*",
    "/api/[x",
    "GET",
    "GE T",
    "upstream",
    "response",
    "sideways",
    "^curl/",
    "curl/(",
    "~",
    "null",
    "true",
    "\"\"",
    "'quoted'",
    "*anchor",
    "&anchor 1s",
    "!tag x",
    "|",
    "1.5",
    "-0",
    "0x1F",
    ".inf",
    "beta",
];

/// A YAML node before it is written out.
#[derive(Debug, Clone)]
enum Node {
    Scalar(String),
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
}

fn scalar() -> impl Strategy<Value = Node> {
    prop_oneof![
        4 => select(VALUES).prop_map(|v| Node::Scalar(v.to_string())),
        1 => "[ -~]{0,12}".prop_map(Node::Scalar),
    ]
}

fn any_key() -> impl Strategy<Value = String> {
    prop_oneof![
        select(fault_keys()).prop_map(String::from),
        select(PARAM_KEYS).prop_map(String::from),
        select(TOP_KEYS).prop_map(String::from),
        "[a-z_]{1,8}",
    ]
}

/// Any nesting of maps, sequences and scalars, keys drawn from the schema.
fn any_node() -> impl Strategy<Value = Node> {
    scalar().prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec((any_key(), inner.clone()), 0..5).prop_map(Node::Map),
            prop::collection::vec(inner, 0..5).prop_map(Node::Seq),
        ]
    })
}

/// The parameters of a kind (or of `match`/`pattern`): mostly known keys.
fn parameters() -> impl Strategy<Value = Node> {
    let value = prop_oneof![4 => scalar(), 1 => any_node()];
    prop::collection::vec((select(PARAM_KEYS).prop_map(String::from), value), 0..4)
        .prop_map(Node::Map)
}

/// Valid parameters of each kind the crate has, by key (the first one is
/// the required one); a new kind fails
/// `the_kind_parameters_cover_every_kind_and_load_as_that_kind` until it is
/// added here.
const KIND_PARAMETERS: &[(&str, &[(&str, &str)])] = &[
    (
        "latency",
        &[
            ("delay", "150ms"),
            ("jitter", "10ms"),
            ("direction", "upstream"),
            ("per", "message"),
        ],
    ),
    (
        "status",
        &[
            ("code", "503"),
            ("body", "down"),
            ("headers", "{retry-after: '1'}"),
        ],
    ),
    ("reset", &[("after_bytes", "1KB")]),
    ("close", &[("after", "2s")]),
    ("blackhole", &[]),
    ("refuse", &[]),
    (
        "bandwidth",
        &[("rate", "100KB/s"), ("direction", "response")],
    ),
    ("slow_close", &[("delay", "1s")]),
    (
        "slicer",
        &[
            ("average_size", "64"),
            ("size_variation", "8"),
            ("delay", "1ms"),
        ],
    ),
    ("limit_data", &[("bytes", "1MB")]),
    ("replay", &[("file", "trace.log"), ("format", "nginx")]),
    (
        "grpc",
        &[("status", "UNAVAILABLE"), ("message", "inventory down")],
    ),
    ("goaway", &[]),
];

/// The valid parameters of `kind`, from [`KIND_PARAMETERS`].
fn kind_parameters(kind: &str) -> &'static [(&'static str, &'static str)] {
    KIND_PARAMETERS
        .iter()
        .find(|(k, _)| *k == kind)
        .unwrap_or_else(|| panic!("no parameters for kind {kind}: add it to KIND_PARAMETERS"))
        .1
}

/// Valid optional keys of a fault.
const EXTRAS: &[(&str, &str)] = &[
    ("name", "flaky"),
    ("probability", "30%"),
    ("match", "/api/*"),
    ("at", "1s"),
    ("for", "5s"),
    ("pattern", "{up: 1s, down: 2s}"),
];

fn scalars(pairs: &[(&str, &str)], keep: &[bool]) -> Vec<(String, Node)> {
    pairs
        .iter()
        .zip(keep)
        .filter(|(_, keep)| **keep)
        .map(|((k, v), _)| (k.to_string(), Node::Scalar(v.to_string())))
        .collect()
}

/// A fault that is valid as built (one kind, valid parameters, some extras)
/// and then, sometimes, has one value replaced by a random one.
fn plausible_fault() -> impl Strategy<Value = Node> {
    let kind =
        select(kind_keys().collect::<Vec<_>>()).prop_map(|kind| (kind, kind_parameters(kind)));
    let keep = prop::collection::vec(any::<bool>(), 3);
    let extras = prop::collection::vec(any::<bool>(), EXTRAS.len());
    let mutation = prop::option::weighted(0.5, (any::<prop::sample::Index>(), scalar()));
    (kind, keep, extras, mutation).prop_map(|((kind, params), mut keep, extras, mutation)| {
        keep[0] = true;
        let mut entries = scalars(EXTRAS, &extras);
        entries.push((kind.to_string(), Node::Map(scalars(params, &keep))));
        if let Some((at, value)) = mutation {
            let i = at.index(entries.len());
            entries[i].1 = value;
        }
        Node::Map(entries)
    })
}

/// Something shaped like a fault: mostly plausible, else known fault keys
/// with random values.
fn fault() -> impl Strategy<Value = Node> {
    let value = prop_oneof![3 => parameters(), 3 => scalar(), 1 => any_node()];
    let random = prop::collection::vec((select(fault_keys()).prop_map(String::from), value), 0..5)
        .prop_map(Node::Map);
    prop_oneof![3 => plausible_fault(), 1 => random]
}

/// Something shaped like a fault file, sometimes with a stray key or item.
fn fault_file() -> impl Strategy<Value = Node> {
    let faults = prop_oneof![
        4 => prop::collection::vec(fault(), 0..4).prop_map(Node::Seq),
        1 => any_node(),
    ];
    let extra = prop::option::weighted(0.15, (any_key(), any_node()));
    (faults, extra).prop_map(|(faults, extra)| {
        let mut entries = vec![("faults".to_string(), faults)];
        entries.extend(extra);
        Node::Map(entries)
    })
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Block,
    Flow,
    /// Block at the top, flow from this depth down.
    FlowFrom(usize),
}

fn write_flow(node: &Node, out: &mut String) {
    match node {
        Node::Scalar(s) => out.push_str(s),
        Node::Map(entries) => {
            out.push('{');
            for (i, (key, value)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(key);
                out.push_str(": ");
                write_flow(value, out);
            }
            out.push('}');
        }
        Node::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_flow(item, out);
            }
            out.push(']');
        }
    }
}

/// Writes `node` at `depth` (two spaces each); block mappings and sequences
/// start on their own line, everything else follows inline.
fn write_block(node: &Node, depth: usize, style: Style, out: &mut String) {
    let inline = match (node, style) {
        (Node::Scalar(_), _) | (_, Style::Flow) => true,
        (Node::Map(e), _) if e.is_empty() => true,
        (Node::Seq(s), _) if s.is_empty() => true,
        (_, Style::FlowFrom(d)) => depth >= d,
        (_, Style::Block) => false,
    };
    if inline {
        out.push(' ');
        write_flow(node, out);
        out.push('\n');
        return;
    }
    out.push('\n');
    let indent = "  ".repeat(depth);
    match node {
        Node::Map(entries) => {
            for (key, value) in entries {
                out.push_str(&format!("{indent}{key}:"));
                write_block(value, depth + 1, style, out);
            }
        }
        Node::Seq(items) => {
            for item in items {
                out.push_str(&format!("{indent}-"));
                write_block(item, depth + 1, style, out);
            }
        }
        Node::Scalar(_) => unreachable!("scalars are inline"),
    }
}

fn render(node: &Node, style: Style) -> String {
    let mut out = String::new();
    match (node, style) {
        (Node::Map(entries), Style::Block | Style::FlowFrom(_)) if !entries.is_empty() => {
            for (key, value) in entries {
                out.push_str(key);
                out.push(':');
                write_block(value, 1, style, &mut out);
            }
        }
        _ => {
            write_flow(node, &mut out);
            out.push('\n');
        }
    }
    out
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![
        Just(Style::Block),
        Just(Style::Flow),
        (1usize..4).prop_map(Style::FlowFrom),
    ]
}

/// What an accepted file promises: every fault's kind key can be located,
/// which is what mode-mismatch errors rely on.
fn check_kinds_are_locatable(text: &str, file: &FaultFile) {
    for (i, fault) in file.faults.iter().enumerate() {
        let path = [
            Segment::Key("faults".to_string()),
            Segment::Index(i),
            Segment::Key(fault.kind.key().to_string()),
        ];
        let at = locate(text, &path);
        assert!(
            at.is_some_and(|(line, column)| line >= 1 && column >= 1),
            "faults[{i}].{} not located in {text:?}",
            fault.kind.key()
        );
    }
}

/// A chain of `depth` nested collections (a map or a list at each level,
/// each with a scalar beside the deeper one); the root is the outermost.
fn nested_chain() -> impl Strategy<Value = (usize, Node)> {
    let levels = prop::collection::vec((any::<bool>(), select(VALUES)), 1..=90);
    levels.prop_map(|levels| {
        let mut node = Node::Scalar("x".to_string());
        for (is_map, beside) in &levels {
            let beside = Node::Scalar(beside.to_string());
            node = match is_map {
                true => Node::Map(vec![("k".to_string(), node), ("s".to_string(), beside)]),
                false => Node::Seq(vec![node, beside]),
            };
        }
        (levels.len(), node)
    })
}

fn too_deep(text: &str) -> bool {
    parse(text).is_err_and(|e| e.message.starts_with("nested deeper than"))
}

proptest! {
    // A fixed seed: the suite is deterministic; set another to explore.
    #![proptest_config(ProptestConfig {
        cases: 384,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x0000_ba5e),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_give_ok_or_a_located_error(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_yaml_punctuation_gives_ok_or_a_located_error(
        text in "([ \t\n:{}\\[\\],\\-#&*!|>'\"%@`?]|\n---\n|\n\\.\\.\\.\n|faults|latency|delay|[a-z0-9]){0,120}"
    ) {
        let _ = parse(&text);
    }

    #[test]
    fn random_nested_yaml_gives_ok_or_a_located_error(node in any_node(), style in style()) {
        let _ = parse(&render(&node, style));
    }

    /// The depth limit (64) is measured before parsing by a scan of the
    /// text: it must not miss real nesting (that would let libyaml's
    /// quadratic time back in) nor refuse files well within it. The scan
    /// may count a scalar after `- ` as a level, so 63 and 64 may go either
    /// way.
    #[test]
    fn nesting_over_the_limit_is_refused_and_nesting_well_within_it_is_not(
        (depth, node) in nested_chain(),
        style in style(),
    ) {
        let text = render(&node, style);
        if depth <= 62 {
            prop_assert!(!too_deep(&text), "depth {depth} refused: {text}");
        } else if depth > 64 {
            prop_assert!(too_deep(&text), "depth {depth} passed: {text}");
        }
    }

    #[test]
    fn random_fault_files_give_ok_or_a_located_error(node in fault_file(), style in style()) {
        let text = render(&node, style);
        if let Ok(file) = parse(&text) {
            check_kinds_are_locatable(&text, &file);
        }
    }
}

#[test]
fn the_renderer_writes_yaml_the_parser_accepts_in_every_style() {
    let fault = Node::Map(vec![
        ("name".to_string(), Node::Scalar("slow".to_string())),
        (
            "latency".to_string(),
            Node::Map(vec![("delay".to_string(), Node::Scalar("1s".to_string()))]),
        ),
    ]);
    let file = Node::Map(vec![("faults".to_string(), Node::Seq(vec![fault]))]);
    for style in [Style::Block, Style::Flow, Style::FlowFrom(2)] {
        let text = render(&file, style);
        let parsed = parse(&text).unwrap_or_else(|e| panic!("{e} in {style:?}:\n{text}"));
        assert_eq!(parsed.faults.len(), 1, "{style:?}:\n{text}");
    }
}

#[test]
fn the_kind_parameters_cover_every_kind_and_load_as_that_kind() {
    let mut listed: Vec<&str> = KIND_PARAMETERS.iter().map(|(k, _)| *k).collect();
    listed.sort_unstable();
    let mut kinds: Vec<&str> = kind_keys().collect();
    kinds.sort_unstable();
    assert_eq!(listed, kinds, "KIND_PARAMETERS has each kind once");
    for (kind, params) in KIND_PARAMETERS {
        let file = Node::Map(vec![(
            "faults".to_string(),
            Node::Seq(vec![Node::Map(vec![(
                kind.to_string(),
                Node::Map(scalars(params, &vec![true; params.len()])),
            )])]),
        )]);
        let text = render(&file, Style::Block);
        let parsed = parse(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
        assert_eq!(parsed.faults[0].kind.key(), *kind, "{text}");
    }
}
