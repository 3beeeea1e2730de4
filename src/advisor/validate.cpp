// Validation of replies against the candidate space (see validate.h for the rules).
#include "advisor/validate.h"

#include <algorithm>
#include <set>

#include "support/utf8.h"

namespace agentcompile::advisor {

using json = nlohmann::json;

namespace {

constexpr size_t kMaxValueChars = 200;
constexpr size_t kMaxNoteChars = 300;  // docs/advisor.md: a risk's note is kept, 300 characters

std::string excerpt(const std::string& text, size_t limit = kMaxValueChars) { return support::utf8::truncated(text, limit); }

std::string value_text(const json& value) { return excerpt(value.is_string() ? value.get<std::string>() : value.dump()); }

std::string list_text(const json& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

bool contains(const json& list, const json& value) { return std::find(list.begin(), list.end(), value) != list.end(); }

// Parses the reply as one JSON object; a leading/trailing markdown fence is tolerated, nothing else.
bool parse_object(const std::string& reply, json* out, Rejection* why) {
  std::string text = reply;
  const size_t open = text.find("```");
  if (open != std::string::npos) {
    const size_t start = text.find('\n', open);
    const size_t close = text.rfind("```");
    if (start != std::string::npos && close > start) text = text.substr(start + 1, close - start - 1);
  }
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    *why = {"reply", excerpt(reply), "not_json", "the reply is not JSON"};
    return false;
  }
  if (!parsed.is_object()) {
    *why = {"reply", excerpt(reply), "not_object", "the reply is JSON but not an object"};
    return false;
  }
  *out = std::move(parsed);
  return true;
}

}  // namespace

Verdict validate_advice(const Request& request, const std::string& reply) {
  Verdict v;
  json advice;
  Rejection why;
  if (!parse_object(reply, &advice, &why)) {
    v.rejected.push_back(why);
    return v;
  }
  const json& allowed = request.body.at("allowed");
  if (advice.contains("region") && !advice["region"].is_null() && advice["region"] != json(request.region)) {
    v.rejected.push_back({"region", value_text(advice["region"]), "wrong_region",
                          "the reply answers region " + value_text(advice["region"]) + ", the request was for " + request.region});
    return v;
  }
  for (const auto& [key, value] : advice.items()) {
    if (key == "region" || value.is_null()) continue;
    if (key == "label") {
      if (value.is_string() && contains(allowed["labels"], value))
        v.label = value.get<std::string>();
      else
        v.rejected.push_back({"label", value_text(value), "unknown_label", "not one of the compiler's labels (" + list_text(allowed["labels"]) + ")"});
    } else if (key == "priority") {
      if (!value.is_array()) {
        v.rejected.push_back({"priority", value_text(value), "malformed", "priority must be a list of candidate ids"});
        continue;
      }
      std::set<std::string> seen;
      for (size_t i = 0; i < value.size(); ++i) {
        const std::string part = "priority[" + std::to_string(i) + "]";
        if (!value[i].is_string() || !contains(allowed["candidates"], value[i])) {
          v.rejected.push_back({part, value_text(value[i]), "unknown_candidate",
                                "not a candidate of " + request.region + " (" + list_text(allowed["candidates"]) + ")"});
        } else if (!seen.insert(value[i].get<std::string>()).second) {
          v.ignored.push_back({part, "duplicate of an earlier entry (" + value[i].get<std::string>() + ")"});
        } else {
          v.priority.push_back(value[i].get<std::string>());
        }
      }
    } else if (key == "hints") {
      if (!value.is_object()) {
        v.rejected.push_back({"hints", value_text(value), "malformed", "hints must be an object of parameter values"});
        continue;
      }
      for (const auto& [name, hint] : value.items()) {
        if (hint.is_null()) continue;
        const std::string part = "hints." + excerpt(name);  // names come from the reply: bounded like values
        if (!allowed["hints"].contains(name)) {
          v.rejected.push_back({part, value_text(hint), "unknown_parameter", "no candidate of " + request.region + " has a parameter '" + excerpt(name) + "'"});
        } else if (!hint.is_number_integer() || !contains(allowed["hints"][name], hint)) {
          v.rejected.push_back({part, value_text(hint), "value_outside_space",
                                "no candidate has " + excerpt(name) + "=" + value_text(hint) + " (values: " + list_text(allowed["hints"][name]) + ")"});
        } else {
          v.hints[name] = hint.get<int64_t>();
        }
      }
    } else if (key == "risks") {
      if (!value.is_array()) {
        v.rejected.push_back({"risks", value_text(value), "malformed", "risks must be a list"});
        continue;
      }
      for (size_t i = 0; i < value.size(); ++i) {
        const json& risk = value[i];
        const std::string part = "risks[" + std::to_string(i) + "]";
        if (!risk.is_object()) {
          v.rejected.push_back({part, value_text(risk), "malformed", "a risk must be an object"});
        } else if (!risk.contains("candidate") || !contains(allowed["candidates"], risk["candidate"])) {
          v.rejected.push_back({part + ".candidate", value_text(risk.value("candidate", json())), "unknown_candidate",
                                "not a candidate of " + request.region});
        } else if (!risk.contains("kind") || !contains(allowed["risk_kinds"], risk["kind"])) {
          v.rejected.push_back({part + ".kind", value_text(risk.value("kind", json())), "unknown_risk_kind",
                                "not one of " + list_text(allowed["risk_kinds"])});
        } else {
          const json note = risk.value("note", json(""));
          v.risks.push_back({risk["candidate"].get<std::string>(), risk["kind"].get<std::string>(),
                             excerpt(note.is_string() ? note.get<std::string>() : note.dump(), kMaxNoteChars)});
        }
      }
    } else {
      v.ignored.push_back({excerpt(key), "not part of the advice contract"});
    }
  }
  return v;
}

Verdict judge_diagnosis(const Request& request, const std::string& reply, std::string* text) {
  Verdict v;
  json parsed;
  Rejection why;
  if (!parse_object(reply, &parsed, &why)) {
    v.rejected.push_back(why);
    return v;
  }
  const json diagnosis = parsed.value("diagnosis", json(""));
  *text = excerpt(diagnosis.is_string() ? diagnosis.get<std::string>() : diagnosis.dump(), 1000);
  if (parsed.contains("suspect_parameters")) *text += " [suspects: " + excerpt(list_text(parsed["suspect_parameters"])) + "]";
  v.ignored.push_back({"diagnosis", "diagnostic hints are recorded, never used as code"});
  return v;
}

std::vector<int> advised_order(const std::vector<plan::Candidate>& candidates, const Verdict& verdict) {
  std::vector<int> order;
  std::vector<bool> placed(candidates.size(), false);
  for (const auto& id : verdict.priority)
    for (size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].id == id && !placed[i]) {
        order.push_back(static_cast<int>(i));
        placed[i] = true;
      }
  std::vector<std::pair<int, int>> rest;  // (-matched hints, heuristic index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (placed[i]) continue;
    int matched = 0;
    for (const auto& [name, value] : verdict.hints) {
      auto it = candidates[i].params.find(name);
      matched += it != candidates[i].params.end() && it->second == value;
    }
    rest.emplace_back(-matched, static_cast<int>(i));
  }
  std::sort(rest.begin(), rest.end());
  for (const auto& [neg, i] : rest) order.push_back(i);
  return order;
}

}  // namespace agentcompile::advisor
