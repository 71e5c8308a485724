package io.memwire.tpcds.query;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class QueryCatalogTest {
  private final QueryCatalog catalog = new QueryCatalog();

  @Test
  void findsAll103QueryFilesInSparksTestsArtifact() {
    List<String> all = catalog.allNames();
    assertEquals(103, all.size());
    assertEquals("q1", all.get(0));
    assertEquals("q99", all.get(all.size() - 1));
    assertTrue(
        all.containsAll(List.of("q14a", "q14b", "q23a", "q23b", "q24a", "q24b", "q39a", "q39b")));
    assertTrue(catalog.sql("q7").toLowerCase(java.util.Locale.ROOT).contains("from store_sales"));
  }

  @Test
  void selectsByNameAndSetWithoutDuplicates() {
    assertEquals(List.of("q3", "q7", "q19", "q42", "q50", "q55", "q93"), catalog.select("default"));
    assertEquals(List.of("q93", "q3", "q14a"), catalog.select("q93, smoke ,q14a"));
    assertEquals(103, catalog.select("all").size());
  }

  @Test
  void unknownQueryIsAClearError() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> catalog.select("q3,q100"));
    assertTrue(e.getMessage().contains("q100"), e.getMessage());
  }
}
