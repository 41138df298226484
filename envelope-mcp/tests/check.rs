//! `envelope-check` against servers whose faults are known (feature `check`).
