"""``where_attribute``'s cache forgets a class attribute by name through its index (issue 47: the scan of the whole
cache it replaced was 3% of a micro-workload schedule), and only that attribute."""

from racecheck.control import memory_names


def test_a_class_attribute_written_is_looked_up_again_and_others_are_kept():
    class_dict = {"shared": 1, "other": 2}
    Holder = type("Holder", (), class_dict)  # noqa: N806 - a class made here, without <locals> in its name
    Subclass = type("Subclass", (Holder,), {})  # noqa: N806
    assert memory_names.where_attribute(Holder, "shared") is Holder
    assert memory_names.where_attribute(Subclass, "shared") is Holder
    assert memory_names.where_attribute(Subclass, "other") is Holder

    del Holder.shared
    assert memory_names.where_attribute(Subclass, "shared") is Holder  # cached until told
    memory_names.forget_class_attribute("shared")
    assert memory_names.where_attribute(Holder, "shared") == "instance"
    assert memory_names.where_attribute(Subclass, "shared") == "instance"

    Subclass.other = staticmethod(len)  # not forgotten: the cache still says what it said
    assert memory_names.where_attribute(Subclass, "other") is Holder
    memory_names.forget_class_attribute("other")
    assert memory_names.where_attribute(Subclass, "other") == "skip"


def test_forgetting_twice_or_a_name_never_cached_is_harmless():
    memory_names.forget_class_attribute("never cached by anything, surely")
    Holder = type("Holder", (), {"value": 0})  # noqa: N806
    assert memory_names.where_attribute(Holder, "value") is Holder
    memory_names.forget_class_attribute("value")
    memory_names.forget_class_attribute("value")
    assert memory_names.where_attribute(Holder, "value") is Holder
