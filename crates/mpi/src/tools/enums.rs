//! MPI_T enumerations: the named values of the control variables that are choices (BRAID_WAIT,
//! BRAID_STRATEGY, the on/off switches). An `MPI_T_enum` handle carries the enumeration's
//! position in [`ENUMS`] plus one, so that no handle is MPI_T_ENUM_NULL.

// The safety contract of the MPI_T_* entry points is the MPI standard's rules for their arguments.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int};

use braid_config::{CmaMode, HierarchyMode, OffloadMode, StrategyKind, WaitMode};

use super::{call, put, put_string, ToolResult};
use crate::consts::*;

/// One enumeration: its name and its items' names; an item's value is its position.
pub(crate) struct Enumeration {
    pub(crate) name: &'static str,
    pub(crate) items: &'static [&'static str],
}

pub(crate) const WAIT: usize = 0;
pub(crate) const SWITCH: usize = 1;
pub(crate) const CMA: usize = 2;
pub(crate) const STRATEGY: usize = 3;
pub(crate) const OFFLOAD: usize = 4;
pub(crate) const HIERARCHY: usize = 5;

pub(crate) static ENUMS: [Enumeration; 6] = [
    Enumeration { name: "braid_wait_mode", items: &["auto", "poll", "block"] },
    Enumeration { name: "braid_switch", items: &["off", "on"] },
    Enumeration { name: "braid_cma_mode", items: &["auto", "off"] },
    Enumeration { name: "braid_strategy", items: &["single", "greedy", "iso", "weighted", "hetero"] },
    Enumeration { name: "braid_offload_mode", items: &["auto", "off"] },
    Enumeration { name: "braid_hierarchy_mode", items: &["auto", "off", "always", "segment"] },
];

/// The value of a choice, as an item of its enumeration.
pub(crate) fn wait_value(mode: WaitMode) -> c_int {
    match mode {
        WaitMode::Auto => 0,
        WaitMode::Poll => 1,
        WaitMode::Block => 2,
    }
}

pub(crate) fn switch_value(on: bool) -> c_int {
    c_int::from(on)
}

pub(crate) fn cma_value(mode: CmaMode) -> c_int {
    match mode {
        CmaMode::Auto => 0,
        CmaMode::Off => 1,
    }
}

pub(crate) fn strategy_value(kind: StrategyKind) -> c_int {
    match kind {
        StrategyKind::Single => 0,
        StrategyKind::Greedy => 1,
        StrategyKind::Iso => 2,
        StrategyKind::Weighted => 3,
        StrategyKind::Hetero => 4,
    }
}

pub(crate) fn offload_value(mode: OffloadMode) -> c_int {
    match mode {
        OffloadMode::Auto => 0,
        OffloadMode::Off => 1,
    }
}

pub(crate) fn hierarchy_value(mode: HierarchyMode) -> c_int {
    match mode {
        HierarchyMode::Auto => 0,
        HierarchyMode::Off => 1,
        HierarchyMode::Always => 2,
        HierarchyMode::Segment => 3,
    }
}

/// The handle of enumeration `index` of [`ENUMS`].
pub(crate) fn handle_of(index: usize) -> MPI_T_enum {
    (index + 1) as MPI_T_enum
}

/// The enumeration a handle names.
fn enumeration(handle: MPI_T_enum) -> ToolResult<&'static Enumeration> {
    (handle as usize).checked_sub(1).and_then(|index| ENUMS.get(index)).ok_or(MPI_T_ERR_INVALID_HANDLE)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_info(enumtype: MPI_T_enum, num: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    call(|_| {
        let enumeration = enumeration(enumtype)?;
        // SAFETY: MPI_T's rules: each out-argument is NULL or valid; a string buffer holds
        // `*name_len` bytes.
        unsafe {
            put(num, enumeration.items.len() as c_int);
            put_string(enumeration.name, name, name_len);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_enum_get_item(enumtype: MPI_T_enum, index: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    call(|_| {
        let enumeration = enumeration(enumtype)?;
        let item = usize::try_from(index).ok().and_then(|index| enumeration.items.get(index)).ok_or(MPI_T_ERR_INVALID_ITEM)?;
        // SAFETY: as in MPI_T_enum_get_info.
        unsafe {
            put(value, index);
            put_string(item, name, name_len);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_name_their_enumeration_and_nothing_else() {
        for (index, expected) in ENUMS.iter().enumerate() {
            assert!(std::ptr::eq(enumeration(handle_of(index)).unwrap(), expected));
        }
        assert_eq!(enumeration(MPI_T_ENUM_NULL).err(), Some(MPI_T_ERR_INVALID_HANDLE));
        assert_eq!(enumeration(handle_of(ENUMS.len())).err(), Some(MPI_T_ERR_INVALID_HANDLE));
    }

    #[test]
    fn values_are_the_positions_of_the_items_the_settings_use() {
        let item = |enumeration: usize, value: c_int| ENUMS[enumeration].items[value as usize];
        assert_eq!(item(WAIT, wait_value(WaitMode::Block)), "block");
        assert_eq!(item(SWITCH, switch_value(true)), "on");
        assert_eq!(item(CMA, cma_value(CmaMode::Off)), "off");
        assert_eq!(item(STRATEGY, strategy_value(StrategyKind::Weighted)), "weighted");
        assert_eq!(item(STRATEGY, strategy_value(StrategyKind::Hetero)), "hetero");
        assert_eq!(item(OFFLOAD, offload_value(OffloadMode::Auto)), "auto");
    }
}
