#include "evt.h"
