// The validator: judges an advisor's reply against the request's candidate space, part by part.
//
// Rules (DESIGN.md, "Contracts: Advice"): the label must be one of the compiler's labels; priority
// may only name the region's candidates; a hint is accepted only if some candidate has exactly that
// parameter value; risks must name a candidate and a known kind and never remove anything. Partial
// advice keeps its valid parts. A reply that is not a JSON object, or that answers another region,
// is rejected whole.
#pragma once

#include <string>
#include <vector>

#include "advisor/advice.h"
#include "advisor/request.h"

namespace agentcompile::advisor {

Verdict validate_advice(const Request& request, const std::string& reply);

// A diagnosis reply is recorded (truncated) and counted as ignored: never used as code.
Verdict judge_diagnosis(const Request& request, const std::string& reply, std::string* text);

// The measuring order the advice implies: accepted priority first (in the advisor's order), then
// the remaining candidates by how many accepted hints they match, ties in heuristic order. Indices
// into plan.candidates. Without accepted advice this is the heuristic order 0, 1, 2, ...
std::vector<int> advised_order(const std::vector<plan::Candidate>& candidates, const Verdict& verdict);

}  // namespace agentcompile::advisor
