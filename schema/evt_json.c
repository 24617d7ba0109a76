#include "evt_json.h"
