// SPDX-License-Identifier: GPL-2.0

//! A module parameter's value, the same on every kernel memmon builds for.

use kernel::module_param::ModuleParamAccess;

/// The value of the module parameter `param`, as loaded (or its default).
///
/// FIXME(7.2): The `kernel` crate gives the value by copy from 7.3 on and by reference
/// before; use `value()` directly once 7.2 is no longer built for.
pub(crate) fn param_value<T: Copy>(param: &ModuleParamAccess<T>) -> T {
    #[cfg(memmon_kernel_7_3)]
    {
        param.value()
    }
    #[cfg(not(memmon_kernel_7_3))]
    {
        *param.value()
    }
}
