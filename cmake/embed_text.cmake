# Writes the text file IN to OUT as a C++ raw string literal (for #include in
# an initializer): the report template (src/report/report.html).
file(READ "${IN}" content)
string(FIND "${content}" ")AB_EMBED\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string's delimiter )AB_EMBED\"")
endif()
file(WRITE "${OUT}.tmp" "R\"AB_EMBED(${content})AB_EMBED\"\n")
file(RENAME "${OUT}.tmp" "${OUT}")
