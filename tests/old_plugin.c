/* A plugin library built for an older plugin ABI: csm must refuse it before calling into it. */
#include "plugin.h"

const int csm_plugin_abi = 3;

int csm_plugin_register(const csm_registrar *r)
{
    (void)r;
    return 0;
}
