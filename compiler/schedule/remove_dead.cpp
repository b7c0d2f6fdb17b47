// compiler/schedule/remove_dead.cpp — the remove_dead stage: the nodes whose results no model output
// needs, through chains of them, leave the graph (Graph::remove_dead), before any kernel is listed.
#include "schedule/stages.h"

namespace modelc {

bool remove_dead(Schedule& s, const LowerOptions&) { return s.graph->remove_dead() > 0; }

}  // namespace modelc
