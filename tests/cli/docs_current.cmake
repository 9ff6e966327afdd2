# docs/commands.md must be what `plumb help --markdown` prints today: the reference is generated from the
# same option declarations as --help, so a changed option without regenerated docs fails here.
#   cmake -DEXE=plumb -DDOC=docs/commands.md -P docs_current.cmake
execute_process(COMMAND ${EXE} help --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plumb help --markdown exited ${rc}")
endif()
file(READ ${DOC} written)
if(NOT generated STREQUAL written)
  string(LENGTH "${generated}" n)
  string(LENGTH "${written}" w)
  message(FATAL_ERROR "${DOC} disagrees with plumb --help (${w} bytes written, ${n} generated): "
                      "run `plumb help --markdown > docs/commands.md` and commit it")
endif()
message(STATUS "${DOC} matches plumb --help")
