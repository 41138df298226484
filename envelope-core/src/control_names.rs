//! [`ControlNames`]: the names one tool's per-call controls take on the wire, renamed where the
//! tool's own arguments already use a control's name.

use std::borrow::Cow;
use std::sync::Arc;

/// The per-call controls' own names ([`Controls::KEYS`](crate::stage::Controls::KEYS)):
/// said here, where each tool's names for them are decided.
pub(crate) const CONTROL_KEYS: [&str; 5] = [
    "response_mode",
    "output_format",
    "compact_only",
    "continuation", // wire: the paging argument
    crate::dialect::DIALECT_CONTROL,
];

/// What a renamed control's name starts with: prefixed again until the name is free.
pub const RENAMED_CONTROL_PREFIX: &str = "envelope_";

/// The argument names one tool's per-call controls
/// ([`Controls::KEYS`](crate::stage::Controls::KEYS)) are read under.
///
/// Every control keeps its own name ([`ControlNames::STANDARD`]) unless the tool's own
/// arguments use it: a tool built at run time for another server (one a proxy fronts) may take
/// a `dialect` or a `continuation` of its own. That argument keeps its name and means what the
/// tool says; the control is renamed for that tool ([`ControlNames::avoiding`]), listed under
/// its new name with a description that says so, read from it, and written under it in every
/// action the tool's answers offer, so that an action followed verbatim is valid against the
/// listed schema. `#[tool]`'s tools keep the standard names.
///
/// ```
/// use envelope_core::stage::ControlNames;
///
/// let own = ["query".to_owned(), "dialect".to_owned()];
/// let names = ControlNames::avoiding(&own);
/// assert_eq!(names.wire("dialect"), "envelope_dialect");
/// assert_eq!(names.wire("response_mode"), "response_mode");
/// assert_eq!(names.control("envelope_dialect"), Some("dialect"));
/// assert!(ControlNames::avoiding(&["query".to_owned()]).is_standard());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ControlNames {
    /// `(control, wire name)` for each renamed control; `None` when none is. One pointer:
    /// every call's controls carry it.
    renamed: Option<Arc<Vec<(&'static str, String)>>>,
}

impl ControlNames {
    /// Every control under its own name.
    pub const STANDARD: ControlNames = ControlNames { renamed: None };

    /// The controls' names for a tool whose own arguments are `own`: each control `own` names
    /// is renamed [`RENAMED_CONTROL_PREFIX`] and its name, prefixed again while that too is
    /// taken (by `own` or by another control).
    pub fn avoiding(own: &[String]) -> ControlNames {
        let taken = |name: &str, renamed: &[(&'static str, String)]| {
            own.iter().any(|argument| argument == name)
                || CONTROL_KEYS.contains(&name)
                || renamed.iter().any(|(_, wire)| wire == name)
        };
        let mut renamed: Vec<(&'static str, String)> = Vec::new();
        for control in CONTROL_KEYS {
            if !own.iter().any(|argument| argument == control) {
                continue;
            }
            let mut wire = format!("{RENAMED_CONTROL_PREFIX}{control}");
            while taken(&wire, &renamed) {
                wire.insert_str(0, RENAMED_CONTROL_PREFIX);
            }
            renamed.push((control, wire));
        }
        ControlNames {
            renamed: (!renamed.is_empty()).then(|| Arc::new(renamed)),
        }
    }

    /// The name the control `control` (one of
    /// [`Controls::KEYS`](crate::stage::Controls::KEYS)) is read under for this tool.
    pub fn wire<'a>(&'a self, control: &'a str) -> &'a str {
        self.renamed
            .iter()
            .flat_map(|renamed| renamed.iter())
            .find(|(renamed, _)| *renamed == control)
            .map_or(control, |(_, wire)| wire)
    }

    /// The control read under the argument `wire`, if one is: `None` for the tool's own
    /// arguments, a control's own name among them where it was renamed.
    pub fn control(&self, wire: &str) -> Option<&'static str> {
        CONTROL_KEYS
            .into_iter()
            .find(|control| self.wire(control) == wire)
    }

    /// Whether `wire` can be the name of the control `control` on some tool: its own name, or
    /// that name renamed ([`RENAMED_CONTROL_PREFIX`], once or more). For a reader of an answer
    /// that has no listing at hand; the tool's own listing says which name it is.
    ///
    /// ```
    /// use envelope_core::stage::ControlNames;
    ///
    /// assert!(ControlNames::may_name("continuation", "continuation"));
    /// assert!(ControlNames::may_name("continuation", "envelope_envelope_continuation"));
    /// assert!(!ControlNames::may_name("continuation", "cursor"));
    /// ```
    pub fn may_name(control: &str, wire: &str) -> bool {
        let mut rest = wire;
        while let Some(shorter) = rest.strip_prefix(RENAMED_CONTROL_PREFIX) {
            rest = shorter;
        }
        rest == control
    }

    /// Each renamed control, as `(control, wire name)`.
    pub fn renamed(&self) -> impl Iterator<Item = (&str, &str)> {
        self.renamed
            .iter()
            .flat_map(|renamed| renamed.iter())
            .map(|(control, wire)| (*control, wire.as_str()))
    }

    /// Whether every control keeps its own name.
    pub fn is_standard(&self) -> bool {
        self.renamed.is_none()
    }

    /// The description the control `control` is listed with for this tool: `description`, said
    /// after which control it is and why it is not under its own name where it was renamed.
    pub fn describe<'a>(&self, control: &str, description: &'a str) -> Cow<'a, str> {
        if self.wire(control) == control {
            return Cow::Borrowed(description);
        }
        Cow::Owned(format!(
            "The per-call control `{control}`, renamed for this tool, whose own `{control}` is \
             an argument of its own. {description}"
        ))
    }

    /// The controls' wire names, in the order of
    /// [`Controls::KEYS`](crate::stage::Controls::KEYS).
    pub fn wires(&self) -> impl Iterator<Item = &str> {
        CONTROL_KEYS.into_iter().map(|control| self.wire(control))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_control_is_renamed_only_where_the_tool_uses_its_name() {
        let names = ControlNames::avoiding(&own(&["continuation", "dialect", "path"]));
        let renamed: Vec<_> = names.renamed().collect();
        assert_eq!(
            renamed,
            [
                ("continuation", "envelope_continuation"),
                ("dialect", "envelope_dialect")
            ]
        );
        assert_eq!(names.wire("compact_only"), "compact_only");
        assert_eq!(names.control("dialect"), None, "the tool's own argument");
        assert_eq!(names.control("envelope_continuation"), Some("continuation"));
        assert_eq!(names.control("compact_only"), Some("compact_only"));
    }

    #[test]
    fn a_renamed_control_never_takes_a_name_in_use() {
        let names = ControlNames::avoiding(&own(&["dialect", "envelope_dialect"]));
        assert_eq!(names.wire("dialect"), "envelope_envelope_dialect");
        let wires: Vec<&str> = names.wires().collect();
        let mut distinct = wires.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), wires.len(), "{wires:?}");
    }

    #[test]
    fn the_standard_names_are_the_controls_own() {
        assert!(ControlNames::STANDARD.is_standard());
        assert_eq!(ControlNames::STANDARD, ControlNames::default());
        let wires: Vec<&str> = ControlNames::STANDARD.wires().collect();
        assert_eq!(wires, CONTROL_KEYS);
    }
}
