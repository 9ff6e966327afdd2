# Registers each TEST_CASE of the given doctest sources as its own ctest entry ("<file>: <case>").
# The names are read from the sources at configure time; the listed files are configure dependencies.
function(plumb_add_doctest_cases target)
  foreach(source IN LISTS ARGN)
    set(path ${CMAKE_CURRENT_SOURCE_DIR}/${source})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
    # UTF-8: without it file(STRINGS) keeps only ASCII runs and cuts names at "×" or "–".
    file(STRINGS ${path} lines ENCODING UTF-8 REGEX "^TEST_CASE\\(\"")
    get_filename_component(area ${source} NAME_WE)
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^TEST_CASE\\(\"(.*)\"\\).*" "\\1" name "${line}")
      # doctest filters treat , and * specially; escape what a case name may contain.
      string(REPLACE "," "\\," filter "${name}")
      string(REPLACE "*" "?" filter "${filter}")  # doctest cannot escape '*'; '?' matches it
      add_test(NAME "${area}: ${name}" COMMAND ${target} "--test-case=${filter}" --no-intro --no-version)
      # A filter that matches no case would pass silently; make it fail instead.
      set_tests_properties("${area}: ${name}" PROPERTIES FAIL_REGULAR_EXPRESSION "test cases: 0 [|]")
    endforeach()
  endforeach()
endfunction()
