// The C API's flavor table section (chash_c.h): names, properties and the
// other programs' options by name, from engine/flavors.h and
// engine/flavor_options.h.
#include "capi/capi_internal.h"

using namespace chash::capi;  // the helpers of every entry point

extern "C" {

// ---- The flavor table ----------------------------------------------------------------

namespace {

// The row of a C flavor value; nullptr past the table.
const chash::internal::FlavorRow* FlavorRowOf(uint32_t flavor) noexcept {
  return flavor > 0xFF ? nullptr : chash::internal::FindFlavor(static_cast<chash::Flavor>(flavor));
}

// The i-th option row of a flavor; nullptr past its last.
const chash::internal::FlavorOption* FlavorOptionOf(uint32_t flavor, uint32_t i) noexcept {
  if (FlavorRowOf(flavor) == nullptr) return nullptr;
  uint32_t seen = 0;
  for (const chash::internal::FlavorOption& row : chash::internal::FlavorOptions()) {
    if (static_cast<uint32_t>(row.flavor) != flavor) continue;
    if (seen++ == i) return &row;
  }
  return nullptr;
}

// CHASH_E_BAD_ARGUMENT naming the value and the flavors there are.
int UnknownFlavor(const char* function, uint32_t flavor) noexcept {
  return Guard([&] {
    return Fail(CHASH_E_BAD_ARGUMENT, std::string(function) + ": unknown flavor " +
                                          std::to_string(flavor) + " (" +
                                          chash::internal::FlavorByteList() + ")");
  });
}

// A text column of the i-th option row of a flavor; nullptr past its last.
const char* FlavorOptionText(uint32_t flavor, uint32_t i,
                             std::string_view chash::internal::FlavorOption::*column) noexcept {
  const chash::internal::FlavorOption* row = FlavorOptionOf(flavor, i);
  return row == nullptr ? nullptr : (row->*column).data();
}

// FlavorOptionValues of every row, made once: static strings for the C API.
// nullptr if they could not be allocated.
const std::vector<std::string>* OptionValueTexts() noexcept {
  static const std::unique_ptr<const std::vector<std::string>> texts =
      []() noexcept -> std::unique_ptr<const std::vector<std::string>> {
    try {
      auto made = std::make_unique<std::vector<std::string>>();
      for (const chash::internal::FlavorOption& row : chash::internal::FlavorOptions()) {
        made->push_back(chash::internal::FlavorOptionValues(row));
      }
      return made;
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }();
  return texts.get();
}

}  // namespace

// The names are string literals (NUL-terminated) of the flavor table.
const char* chash_flavor_name(uint32_t flavor) noexcept {
  const chash::internal::FlavorRow* row = FlavorRowOf(flavor);
  return row == nullptr ? nullptr : row->name.data();
}

int chash_flavor_from_name(const char* name, size_t name_len, uint32_t* flavor) noexcept {
  if (name == nullptr && name_len != 0) return NullArgument("chash_flavor_from_name", "name");
  if (flavor == nullptr) return NullArgument("chash_flavor_from_name", "flavor");
  return Guard([&] {
    chash::Result<chash::Flavor> parsed = chash::ParseFlavor(View(name, name_len));
    if (!parsed.ok()) return Fail(parsed.status());
    *flavor = static_cast<uint32_t>(parsed.value());
    return CHASH_OK;
  });
}

int chash_flavor_property(uint32_t flavor, uint32_t property, uint64_t* value) noexcept {
  if (value == nullptr) return NullArgument("chash_flavor_property", "value");
  const chash::internal::FlavorRow* row = FlavorRowOf(flavor);
  if (row == nullptr) return UnknownFlavor("chash_flavor_property", flavor);
  switch (property) {
    case CHASH_PROPERTY_KEY_HASH_BITS:
      *value = row->key_hash_bits;
      return CHASH_OK;
    case CHASH_PROPERTY_LOOKUP_RULE:
      *value = static_cast<uint64_t>(row->rule);
      return CHASH_OK;
    case CHASH_PROPERTY_TAKES_MULTIPLE:
      *value = chash::FlavorTakesPointMultiple(row->flavor) ? 1 : 0;
      return CHASH_OK;
    case CHASH_PROPERTY_NODE_FIELD:
      *value = row->node_fields;
      return CHASH_OK;
    case CHASH_PROPERTY_RETRY:
      *value = static_cast<uint64_t>(row->retry);
      return CHASH_OK;
    case CHASH_PROPERTY_REMOVES_DOWN:
      *value = row->removes_down ? 1 : 0;
      return CHASH_OK;
    case CHASH_PROPERTY_OTHER_PROGRAM:
      *value = chash::internal::IsProgramFlavor(row->flavor) ? 1 : 0;
      return CHASH_OK;
    default:
      return Guard([&] {
        return Fail(CHASH_E_BAD_ARGUMENT,
                    "chash_flavor_property: unknown property " + std::to_string(property));
      });
  }
}

const char* chash_flavor_option_name(uint32_t flavor, uint32_t i) noexcept {
  return FlavorOptionText(flavor, i, &chash::internal::FlavorOption::name);
}

const char* chash_flavor_option_alias(uint32_t flavor, uint32_t i) noexcept {
  return FlavorOptionText(flavor, i, &chash::internal::FlavorOption::alias);
}

const char* chash_flavor_option_values(uint32_t flavor, uint32_t i) noexcept {
  const chash::internal::FlavorOption* row = FlavorOptionOf(flavor, i);
  const std::vector<std::string>* texts = OptionValueTexts();
  if (row == nullptr || texts == nullptr) return nullptr;
  return (*texts)[static_cast<size_t>(row - chash::internal::FlavorOptions().data())].c_str();
}

const char* chash_flavor_option_default(uint32_t flavor, uint32_t i) noexcept {
  return FlavorOptionText(flavor, i, &chash::internal::FlavorOption::default_text);
}

const char* chash_flavor_option_what(uint32_t flavor, uint32_t i) noexcept {
  return FlavorOptionText(flavor, i, &chash::internal::FlavorOption::what);
}

int chash_ring_options_set(chash_ring_options* options, uint32_t flavor, const char* name,
                           const char* value) noexcept {
  if (const int code = FirstNull("chash_ring_options_set", {{"options", options == nullptr},
                                                            {"name", name == nullptr},
                                                            {"value", value == nullptr}})) {
    return code;
  }
  if (options->size < sizeof(chash_ring_options)) {
    // Every field an option sets is in the 1.0 struct; a smaller size is
    // a caller that did not set it.
    return Fail(CHASH_E_BAD_ARGUMENT,
                "chash_ring_options_set: options->size is not sizeof(chash_ring_options)");
  }
  if (FlavorRowOf(flavor) == nullptr) return UnknownFlavor("chash_ring_options_set", flavor);
  return Fail(
      chash::internal::SetFlavorOption(*options, static_cast<chash::Flavor>(flavor), name, value));
}

}  // extern "C"
