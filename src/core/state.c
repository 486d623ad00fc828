/* The daemon's one state (state.h). */
#include "state.h"

core_state core;
